"""The launcher never ends in a traceback: an unexpected error becomes one line that asks for a report."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Callable

from launcher.leftovers import remove_own_folders

__all__ = ["run_last_resort", "INTERNAL_ERROR_STATUS"]

INTERNAL_ERROR_STATUS = 1
_ISSUES = "please report this bug to the accel-launch maintainers, with the command line"


def run_last_resort(entry: Callable[[], object]) -> None:
    """Run `entry`; an exception it lets out is one stderr line and exit 1, with the private folders removed."""
    try:
        entry()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        remove_own_folders()
        _write("accel-launch: stopped by SIGINT before any rank started")
        os._exit(130)
    except BaseException as exc:  # noqa: BLE001  (the last resort: anything else is a bug of ours)
        remove_own_folders()
        detail = " ".join(str(exc).split())[:300]
        _write(f"accel-launch: internal error in accel-launch {_version()}: {type(exc).__name__}: {detail}; {_ISSUES}")
        os._exit(INTERNAL_ERROR_STATUS)


def _version() -> str:
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
