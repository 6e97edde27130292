"""`accel-launch stacks [PID]`: every rank's Python stack, all threads, while the job goes on (docs/CONTRACT.md
section 8). PID is the launcher's; without it, the one job of this user on this host.
"""

from __future__ import annotations

import click

from launcher.cli.error_exit import OneLineCommand, fail_with
from launcher.contract.hosts import this_host
from launcher.errors import LaunchError
from launcher.escaped import one_line
from launcher.signal_rules import stop_looking

__all__ = ["stacks_command", "STACKS", "STACKS_PROG", "PID"]

STACKS = "stacks"  # the subcommand: `accel-launch stacks`
STACKS_PROG = "accel-launch stacks"
PID_MAX = 1 << 22  # Linux's largest pid (/proc/sys/kernel/pid_max can be at most this, PID_MAX_LIMIT)
# A launcher's PID, as `stacks` and `status` take it: a number no process can have is one line, exit 2.
PID = click.IntRange(min=1, max=PID_MAX)


@click.command(cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("pid", type=PID, required=False)
def stacks_command(pid: int | None) -> None:
    """Print every rank's Python stack, grouped, the odd ones out first; the job goes on.

    PID is the launcher's (without it: the one job of yours on this host). Exit status 2 when no such job runs.

    \b
    Example:
      accel-launch stacks 12345
    """
    stop_looking(STACKS_PROG)  # Ctrl-C ends the look, never the job
    from launcher.run.stacks import ask_ranks, stack_lines, summary_lines
    from launcher.run.stacks.find_job import find_job

    try:
        job = find_job(pid)
    except LaunchError as exc:
        fail_with(STACKS_PROG, exc)
    answers = ask_ranks(job.ranks, job.folder)
    click.echo(one_line(f"accel-launch stacks: job {job.launcher_pid} on {this_host()}, "
                        f"{len(job.ranks)} rank(s): {job.command}"))
    for line in summary_lines(answers):
        click.echo(f"  {one_line(line)}")
    click.echo("")
    for line in stack_lines(answers):
        click.echo(one_line(line))
