"""What crosses a boundary, as leaves every folder may import: the names and numbers the launcher promises
(`names`), the job as data (`job_config`: JobConfig and what it holds, `resolved_backend`, `run_settings`,
`engine_options`), and the hosts and node table the head hands its nodes (`hosts`, `node_table`)."""
