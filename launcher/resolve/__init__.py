"""Where values come from: the backend's precedence with the ds_config (backend_order), the .env file (envfile),
and the torch-free look at this node's accelerator and the launcher's check of the backend (node_check)."""
