"""The console scripts' first code: every signal has its outcome before anything else is imported.

`launcher.cli.command` imports click and the whole launcher (a tenth of a second and more); a signal in that
time has the outcome it has later (docs/RELIABILITY.md), never a traceback. What comes before this module's
first line (the interpreter's own start and its site imports) is Python's: nothing of the launcher exists yet.

A bug of ours is one line too (`run_catching_bugs`): an exception that no other part handled becomes
`accel-launch: internal error ...`, asking for a report, with exit status 1 (one that says a limit was reached is
that limit's one line instead, with exit status 2: launcher.limits), and whatever the launcher made is undone.
Click-free: it runs before click is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from launcher.signal_rules import clean_up, install_signal_rules

__all__ = ["main", "report_main", "node_main", "run_catching_bugs"]


def main() -> None:
    """Console script `accel-launch` (and `python -m launcher`), with its subcommand `report`."""
    _start(_launch, "accel-launch")


def report_main() -> None:
    """Console script `accel-report`."""
    _start(_report, "accel-report")


def node_main() -> None:
    """`python -m launcher.node`: a node launcher that a hostfile launch's head started (its job, in
    HEAD_VARS, is removed once read: launcher.cli.command.run_node_job)."""
    _start(_node, "accel-launch", node_launcher=True)


def _start(entry: Callable[[], object], prog: str, node_launcher: bool = False) -> None:
    """The signal rules first (this module and theirs import only what the interpreter has loaded already, and
    the table of names, which imports nothing), then the launcher's own variables that this process must not have
    inherited removed (whatever the user or a parent launch left of them; a node launcher keeps its job from its
    head until it has read it), its threads kept lean under an address-space limit, an open-file limit too low to
    import the rest refused in one line, then the guards on the standard streams and on bugs of ours (one line,
    never a traceback)."""
    install_signal_rules()
    from launcher.contract.names import HEAD_VARS, INTERNAL_VARS, VALIDATION_STATUS
    from launcher.limits import lean_threads, open_files_problem

    for name in INTERNAL_VARS if node_launcher else (*INTERNAL_VARS, *HEAD_VARS):
        os.environ.pop(name, None)
    lean_threads()
    problem = open_files_problem()
    if problem is not None:
        sys.stderr.write(f"{prog}: error: {problem}\n")
        sys.exit(VALIDATION_STATUS)
    from launcher.cli.std_streams import guard_std_streams

    guard_std_streams()
    run_catching_bugs(entry, prog)


def _launch() -> None:
    from launcher.cli.command import accel_launch

    accel_launch(prog_name="accel-launch")


def _report() -> None:
    from launcher.cli.report import REPORT_PROG, report_command

    report_command(prog_name=REPORT_PROG)


def _node() -> None:
    from launcher.cli.command import run_node_job

    run_node_job()


_ISSUES = "please report this bug to the accel-launch maintainers, with the command line"


def run_catching_bugs(entry: Callable[[], object], prog: str = "accel-launch") -> None:
    """Run `entry`; an exception it lets out is one stderr line and exit 1, after the private folders are
    removed. What the line needs is imported before `entry` runs, not after something failed."""
    from launcher.contract.names import FAILURE_STATUS, VALIDATION_STATUS
    from launcher.escaped import one_line
    from launcher.limits import exhausted_limit

    try:
        entry()
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001  (anything that comes this far is a bug of ours, or a limit)
        clean_up()
        limit = exhausted_limit(exc)
        if limit is not None:
            _write(f"{prog}: error: {one_line(limit)}")
            os._exit(VALIDATION_STATUS)
        detail = one_line(" ".join(str(exc).split())[:300])
        _write(f"{prog}: internal error in accel-launch {_version()}: {type(exc).__name__}: {detail}; {_ISSUES}")
        os._exit(FAILURE_STATUS)


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("accel-launch")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _write(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
