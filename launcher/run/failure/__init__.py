"""How a job failed: which rank failed first (first_failure, from each rank's exit time), its short account
(rank_failure), and what it left in its error file (root_cause, read by the launcher alone)."""
