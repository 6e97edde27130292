"""How a job failed: which rank failed first (from each rank's exit time), its short account and the root cause
handed on to a parent's error file (rank_failure), and what the rank left in its error file (root_cause, read by
the launcher alone), and whether the OOM killer ended it (oom_kill)."""
