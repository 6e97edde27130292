"""The first code in every rank (bootstrap): its life tied to the launcher's (launcher_death), its CPU binding
(bind_cores), the backend validated and made torch's default (validate_backend, against the node's facts cache:
node_facts_cache), DeepSpeed and transformers bridged (deepspeed_bridge, hf_bridge), then the user's program."""
