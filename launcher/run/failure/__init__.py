"""How a job failed: which rank failed first (first_failure, from each rank's exit time: exit_times), its
short account (rank_failure), and what it left in its error file (root_cause; error_files keeps those files
from the engine)."""
