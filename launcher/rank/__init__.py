"""The first code in every rank (bootstrap): its life tied to the launcher's (launcher_link), its CPU binding
(bind_cores), the backend validated and made torch's default (compile_hook, against the node's facts cache:
node_facts_cache), compiles shared (compile_cache), DeepSpeed and transformers bridged (library_bridges), then the
user's program."""
