"""The launcher's watch over its ranks while they run (docs/CONTRACT.md section 9): progress_file (a rank's record,
read), stragglers (the slow rank, and when its line is said), lone_compiles (a rank compiling alone once the job steps),
stalls (the hang), rank_frames (where a rank is, from its stacks), job_watch (the thread that looks, on both paths),
status_rows (`accel-launch status`), node_rows (the other nodes' ranks, from the job's store)."""
