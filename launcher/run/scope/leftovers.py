"""The launcher's private folders in the temp dir: each names its owner, and a dead owner's is swept.

A launcher killed with SIGKILL cannot remove its folder; the next launch with the same temp dir does.
A folder counts as dead only when its owner file names a process (pid and start time) that is gone, so
a folder being made right now (its owner file written whole or not yet there: launchers starting side by side
sweep each other's temp dir), one whose owner file says nothing readable, or one of another user, is never
touched. The owner file is read as any file a rank could replace (the ranks' stacks folder is inside): a regular
file reached through no link, never opened to block, at most _OWNER_BYTES.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil

from launcher.shared_files import UnsafeFileError, publish_file, read_user_text
from launcher.signal_rules import add_cleanup, signals_deferred

__all__ = ["PREFIX", "log_folder", "make_private_folder", "sweep_dead_folders", "remove_own_folders"]

PREFIX = "accel-launch-"
_OWNER_FILE = "owner"
_OWNER_BYTES = 64  # "PID START-TIME"
_own: list[Path] = []


def log_folder(log_dir: str | None) -> Path:
    """The folder the ranks' logs go in: --log-dir itself, as torchrun takes it (each attempt's folder inside it
    is a fresh 0700 one, launcher/run/group/rank_logs.py), else a private (0700) folder in the temp dir."""
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        return Path(log_dir)
    return make_private_folder()


def make_private_folder() -> Path:
    """A fresh 0700 folder in the temp dir, marked with this process as its owner; dead owners' are swept."""
    sweep_dead_folders(Path(tempfile.gettempdir()))
    add_cleanup(remove_own_folders)
    with signals_deferred():  # a stop signal cannot come between the folder's making and its being known
        path = Path(tempfile.mkdtemp(prefix=PREFIX))
        _own.append(path)
    publish_file(path / _OWNER_FILE, _identity(psutil.Process()))
    return path


def remove_own_folders() -> None:
    """Remove the folders this process made (an immediate end: a stop signal before any rank, an internal error)."""
    while _own:
        shutil.rmtree(_own.pop(), ignore_errors=True)


def sweep_dead_folders(parent: Path) -> list[Path]:
    """Remove this user's private folders in `parent` whose owner is no longer running; return them."""
    swept = []
    for folder in parent.glob(f"{PREFIX}*"):
        try:
            if folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                continue
            owner = read_user_text(str(folder / _OWNER_FILE), _OWNER_BYTES, follow_symlinks=False)
        except (OSError, UnsafeFileError):
            continue
        if not _alive(owner):
            shutil.rmtree(folder, ignore_errors=True)
            swept.append(folder)
    return swept


def _identity(process: psutil.Process) -> str:
    return f"{process.pid} {process.create_time():.2f}"


def _alive(owner: str) -> bool:
    """False only for an owner file that names a process which is gone; what cannot be read counts as alive."""
    pid_text, _, _ = owner.partition(" ")
    if not pid_text.isascii() or not pid_text.isdigit():
        return True
    try:
        process = psutil.Process(int(pid_text))
        return _identity(process) == owner.strip()
    except (ValueError, psutil.Error):
        return False
