"""`accel-launch status [PID]`: one row per rank of a running job on this host (docs/CONTRACT.md section 9): its
phase, steps, seconds a step, the age of its last step, CPU and memory, the odd ones first; `--watch` redraws the
table in place (at a terminal; elsewhere one table after another) until the job ends. PID is the launcher's;
without it, the one job of this user here. Nothing is asked of the ranks: they go on as before.
"""

from __future__ import annotations

import sys
import time

import click

from launcher.cli.error_exit import OneLineCommand, fail_with
from launcher.cli.stacks import PID
from launcher.contract.hosts import this_host
from launcher.errors import LaunchError
from launcher.escaped import one_line

__all__ = ["status_command", "STATUS", "STATUS_PROG"]

STATUS = "status"  # the subcommand: `accel-launch status`
STATUS_PROG = "accel-launch status"
_REDRAW = "\x1b[H\x1b[J"  # the cursor home, the screen cleared below it
_WATCH_SECONDS = 1.0


@click.command(cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("pid", type=PID, required=False)
@click.option("--watch", is_flag=True, help="Redraw the table every second until the job ends.")
def status_command(pid: int | None, watch: bool) -> None:
    """Print one row per rank of a running job: phase, steps, seconds a step, CPU, memory; the odd ones first.

    PID is the launcher's (without it: the one job of yours on this host). Exit status 2 when no such job runs.
    Only this node's ranks: on a job of several nodes, run it on each node.

    \b
    Example:
      accel-launch status --watch 12345
    """
    from launcher.run.stacks.find_job import find_job
    from launcher.run.watch.status_rows import format_rows, status_rows

    try:
        job = find_job(pid)
    except LaunchError as exc:
        fail_with(STATUS_PROG, exc)
    redraw = watch and sys.stdout.isatty()
    while True:
        host = this_host()
        rows = status_rows(job.ranks, job.folder, host)
        lines = [one_line(f"accel-launch status: job {job.launcher_pid} on {host} (this node's ranks), "
                          f"{len(job.ranks)} rank(s): {job.command}"), *format_rows(rows)]
        click.echo((_REDRAW if redraw else "") + "\n".join(lines))
        if not watch:
            return
        time.sleep(_WATCH_SECONDS)
        try:
            job = find_job(job.launcher_pid)
        except LaunchError:
            click.echo("accel-launch status: the job ended")
            return
        if not redraw:
            click.echo("")
