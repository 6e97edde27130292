"""The job the head decides, from the command line to one checked JobConfig: what the user typed (options,
validate), where the backend and the env file's values come from (backend_order, envfile), the job built and,
unless this is a hostfile launch's head, placed on this node (build_job), the dry-run table (plan_table), and the
job a head sends its nodes, read back (node_job)."""
