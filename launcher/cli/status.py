"""`accel-launch status [PID]`: one row per rank of a running job (docs/CONTRACT.md section 9): its phase, steps,
seconds a step, the age of its last step, CPU and memory, the odd ones first; `--watch` redraws the table in place
(at a terminal; elsewhere one table after another) until the job ends. PID is the launcher's on this host; without
it, the one job of this user here. On a job of several nodes the other nodes' ranks come from the job's store
(launcher/run/watch/node_rows.py), and one line says which nodes are not shown, and why. Nothing is asked of the
ranks: they go on as before.
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
from launcher.signal_rules import stop_looking

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

    PID is the launcher's on this host (without it: the one job of yours here). Exit status 2 when no such job
    runs. On a job of several nodes, every node's ranks, the others' as their nodes last published them (every 5 s)
    in the job's store; where it is not reached within 2 s, this node's, and one line saying so.

    \b
    Example:
      accel-launch status --watch 12345
    """
    stop_looking(STATUS_PROG)  # Ctrl-C ends the look, never the job
    from launcher.run.stacks.find_job import find_job
    from launcher.run.watch.node_rows import OtherNodes
    from launcher.run.watch.status_rows import format_rows, local_facts, status_rows

    try:
        job = find_job(pid, STATUS_PROG)
    except LaunchError as exc:
        fail_with(STATUS_PROG, exc)
    redraw = watch and sys.stdout.isatty()
    others = OtherNodes(job)
    while True:
        host = this_host()
        read = others.read()  # first: this node's rows are then the newer
        facts = local_facts(job.ranks, job.folder, host)
        facts += [fact for fact in read.facts if fact.rank not in job.ranks]
        nodes = f" on {read.shown} of {read.nodes} nodes" if read.nodes > 1 else ""
        lines = [one_line(f"accel-launch status: job {job.launcher_pid} on {host}, {len(facts)} rank(s){nodes}: "
                          f"{job.command}")]
        if read.missing:
            lines.append(one_line(f"accel-launch status: {read.missing}"))
        lines += format_rows(status_rows(facts))
        click.echo((_REDRAW if redraw else "") + "\n".join(lines))
        if not watch:
            return
        time.sleep(_WATCH_SECONDS)
        try:
            job = find_job(job.launcher_pid, STATUS_PROG)
        except LaunchError:
            click.echo("accel-launch status: the job ended")
            return
        if not redraw:
            click.echo("")
