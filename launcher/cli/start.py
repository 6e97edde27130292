"""The console scripts' first code: the last resort is in place before the launcher's own imports.

`launcher.cli.command` imports click and the whole launcher (a tenth of a second and more); a Ctrl-C or
SIGTERM in that time ends with one line and 128+N like any later one, never with a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

from launcher.cli.last_resort import run_last_resort
from launcher.cli.std_streams import guard_std_streams

__all__ = ["main", "report_main", "node_main"]


def main() -> None:
    """Console script `accel-launch` (and `python -m launcher`); `accel-launch report` prints the report."""
    guard_std_streams()
    if sys.argv[1:2] == ["report"] and not Path("report").exists():
        return run_last_resort(lambda: _report(sys.argv[2:]))
    run_last_resort(_launch)


def report_main() -> None:
    """Console script `accel-report`."""
    guard_std_streams()
    run_last_resort(lambda: _report(sys.argv[1:]))


def node_main() -> None:
    """`python -m launcher.multinode.node`: a node launcher that a hostfile launch's head started."""
    guard_std_streams()
    run_last_resort(_node)


def _launch() -> None:
    from launcher.cli.command import accel_launch

    accel_launch(prog_name="accel-launch")


def _report(argv: list[str]) -> None:
    from launcher.cli.report import report_command

    report_command(args=argv, prog_name="accel-report")


def _node() -> None:
    from launcher.cli.command import run_node_job

    run_node_job()
