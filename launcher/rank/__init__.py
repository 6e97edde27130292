"""The first code in every rank (bootstrap): its CPU binding (bind_cores), the backend validated and made
torch's default (backend, against the node's facts cache: node_facts_cache), DeepSpeed bridged
(deepspeed_bridge), then the user's program."""
