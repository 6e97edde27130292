"""One attempt's ranks, the same on both paths (rank_group): started with torch's worker variables (rank_start), their
processes and exits (rank_processes), their output (rank_logs, output_copy, terminal_lines), stopped (rank_stop)."""
