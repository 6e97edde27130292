"""What crosses a boundary, as leaves every folder may import: the names and numbers the launcher promises
(`names`), the job as data (`job`: JobConfig and what it holds, `backend`, `engine_options`), and the hosts
and node table the head hands its nodes (`hosts`, `node_table`)."""
