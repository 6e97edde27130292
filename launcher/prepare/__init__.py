"""From the command line to one checked job: `LaunchOptions` (options) resolved into a JobConfig (`prepare_job`,
build_job), the dry-run plan (plan), and a node placing the job its head sent (node_job)."""
