"""The launcher never ends in a traceback: an unexpected error becomes one line that asks for a report,
and a stop signal that comes before the job's own handlers (torch elastic's) ends it with 128+N.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from launcher.cli.escaped import one_line

__all__ = ["run_last_resort", "INTERNAL_ERROR_STATUS", "Stopped"]

INTERNAL_ERROR_STATUS = 1
_ISSUES = "please report this bug to the accel-launch maintainers, with the command line"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal (SIGINT, SIGTERM, SIGHUP) to the launcher outside the job's own handling of it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise Stopped(signum)


def run_last_resort(entry: Callable[[], object]) -> None:
    """Run `entry`; an exception it lets out is one stderr line and exit 1, a stop signal 128+N; either way
    the private folders are removed."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, _stop)
    try:
        entry()
    except SystemExit:
        raise
    except Stopped as stop:
        _remove_own_folders()
        _write(f"accel-launch: stopped by {signal.Signals(stop.signum).name}; no rank was left running")
        os._exit(128 + stop.signum)
    except BaseException as exc:  # noqa: BLE001  (the last resort: anything else is a bug of ours)
        _remove_own_folders()
        detail = one_line(" ".join(str(exc).split())[:300])
        _write(f"accel-launch: internal error in accel-launch {_version()}: {type(exc).__name__}: {detail}; {_ISSUES}")
        os._exit(INTERNAL_ERROR_STATUS)


def _remove_own_folders() -> None:
    from launcher.run.leftovers import remove_own_folders  # psutil: not before the handlers are in place

    remove_own_folders()


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
