"""This node's ranks, as its plan says (`run_job`, spawn): one rank group for both paths (rank_group: output,
exits, the shutdown window, the first failure) driven by the direct path (direct_run) or torch elastic's agent
(agent_launch, rank_agent), torch's worker variables (rank_start), the engine's rendezvous handlers (rendezvous/),
restarts, teardown, the first failure (failure/), every rank's stack (stacks/) and the watch over the ranks as they
run (watch/: their progress, the slow rank, a rank compiling alone, the hang; `accel-launch status`'s rows)."""
