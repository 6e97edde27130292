"""Where values come from: the backend's precedence (backend_order), the .env file (envfile), the ds_config
(ds_config), and the torch-free look at this node's accelerator (node_facts) and its check (node_check)."""
