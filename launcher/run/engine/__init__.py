"""torch elastic's agent driving the rank group (the run side's one torch-importing folder): engine_run (the path's
entry and how the job ended), agent_launch (the worker spec and rendezvous from the plan), rank_agent (the agent's
extension points), rendezvous/ (our handlers)."""
