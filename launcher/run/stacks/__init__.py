"""Every rank's Python stack, on demand and when a job is stopped (docs/CONTRACT.md section 8)."""

from launcher.run.stacks.job_stacks import JobStacks, dump_file_text
from launcher.run.stacks.rank_answers import RankAnswer, ask_ranks
from launcher.run.stacks.stack_report import stack_lines, summary_lines

__all__ = ["JobStacks", "RankAnswer", "ask_ranks", "dump_file_text", "stack_lines", "summary_lines"]
