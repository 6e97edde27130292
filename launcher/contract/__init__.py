"""What crosses a boundary, as leaves every folder may import: the names and numbers the launcher promises
(`names`), the job in its two phases (`job_config`: the head's JobConfig, what it holds, and a node's NodePlan;
`program`: what each rank runs; `job_json`: the job as the head sends it; `resolved_backend`, `run_settings`,
`engine_options`), and the hosts and node table the head hands its nodes (`hosts`, `node_table`)."""
