"""A bug of ours as one line: the launcher never ends in a traceback. An exception that no other part
handled becomes `accel-launch: internal error ...`, asking for a report, with exit status 1 (one that says a
limit was reached is that limit's one line instead, with exit status 2: launcher.limits), and whatever
the launcher made is undone (signals have their own rules: launcher/signal_rules.py). Click-free: it runs
before click is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from launcher.contract.names import FAILURE_STATUS, VALIDATION_STATUS
from launcher.escaped import one_line
from launcher.limits import exhausted_limit
from launcher.signal_rules import clean_up

__all__ = ["run_catching_bugs"]

_ISSUES = "please report this bug to the accel-launch maintainers, with the command line"


def run_catching_bugs(entry: Callable[[], object]) -> None:
    """Run `entry`; an exception it lets out is one stderr line and exit 1, after the private folders are
    removed."""
    try:
        entry()
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001  (anything that comes this far is a bug of ours, or a limit)
        clean_up()
        limit = exhausted_limit(exc)
        if limit is not None:
            _write(f"accel-launch: error: {one_line(limit)}")
            os._exit(VALIDATION_STATUS)
        detail = one_line(" ".join(str(exc).split())[:300])
        _write(f"accel-launch: internal error in accel-launch {_version()}: {type(exc).__name__}: {detail}; {_ISSUES}")
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
