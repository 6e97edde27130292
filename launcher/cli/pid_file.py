"""DeepSpeed's `--save_pid`: the launcher's pid in `/tmp/<pid>.deepspeed` while the job runs, for a program that
started accel-launch and wants the process to signal (deepspeed/launcher/launch.py writes the same file).

The file is made new (never through a link, never over an existing file: that is one line and exit 2, as
DeepSpeed's launcher refuses it too) and removed when the job ends, however it ends short of SIGKILL.
"""

from __future__ import annotations

import os
from pathlib import Path

from launcher.errors import FlagConflictError

__all__ = ["save_pid", "remove_pid_file", "PID_FOLDER"]

PID_FOLDER = Path("/tmp")  # DeepSpeed's PID_FILE_BASEPATH


def save_pid() -> Path:
    """Write this process's pid to a new `/tmp/<pid>.deepspeed`; FlagConflictError when it cannot."""
    path = PID_FOLDER / f"{os.getpid()}.deepspeed"
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise FlagConflictError("--save_pid", f"cannot create {path}: {exc.strerror}") from None
    with os.fdopen(handle, "w") as stream:
        stream.write(str(os.getpid()))
    return path


def remove_pid_file(path: Path | None) -> None:
    """Remove the file `save_pid` wrote (None: there is none)."""
    if path is not None:
        path.unlink(missing_ok=True)
