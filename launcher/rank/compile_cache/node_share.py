"""This node's part of compile-once: a lock per graph, so that one rank of the node compiles or fetches it while
the node's other ranks wait, and the node's copy the waiters then load (one transfer per node, not per rank).

The folder is inside torch's own cache folder (`TORCHINDUCTOR_CACHE_DIR`), trusted as torch trusts that folder:
it must be this user's and writable by no one else, or the node shares nothing (the rule of the backend list's
cache, `launcher.shared_files.ownership_problem`). A lock dies with its holder (flock), so a rank whose compiling
peer died stops waiting at once. A copy is kept with its SHA-256 before it: one that does not match it (cut short,
changed on disk) is a miss, and the rank compiles (torch is never handed it, so says nothing of it).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from launcher.rank.compile_cache.job_share import MAX_COPY_BYTES
from launcher.shared_files import UnsafeFileError, lock_within, ownership_problem, publish_file, read_user_bytes

__all__ = ["NodeShare", "private_folder", "sealed", "read_sealed"]

_DIGEST_BYTES = hashlib.sha256().digest_size


def private_folder(path: Path) -> Path | None:
    """`path`, made if missing, when it is a folder of this user's that no one else can write; else None."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    return path if ownership_problem(info, folder=True) is None else None


class NodeShare:
    """The node's locks and copies, one file each per graph key, in a private folder."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._held: dict[str, int] = {}

    def lock(self, key: str, seconds: float) -> tuple[bool, bool]:
        """Take `key`'s lock within `seconds`: (taken, whether another rank of the node held it first)."""
        try:
            fd = os.open(self._path(key, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return False, False
        waited = not lock_within(fd, 0)
        if waited and not lock_within(fd, seconds):
            os.close(fd)
            return False, True
        self._held[key] = fd
        return True, waited

    def unlock(self, key: str) -> None:
        """Let the node's next rank have `key` (nothing when this rank does not hold it)."""
        fd = self._held.pop(key, None)
        if fd is not None:
            os.close(fd)

    def unlock_all(self) -> None:
        """Let go of every lock this rank holds."""
        for key in list(self._held):
            self.unlock(key)

    def holds(self, key: str) -> bool:
        """Whether this rank holds `key`'s lock."""
        return key in self._held

    def read(self, key: str) -> bytes | None:
        """The node's copy of `key`, or None (never blocks; a link, a file not this user's alone, or one that does not
        match its digest, is not read)."""
        return read_sealed(self._path(key, ".copy"))

    def write(self, key: str, payload: bytes) -> None:
        """Keep `payload` as the node's copy of `key`, whole or not at all (a failure only costs a compile)."""
        if len(payload) > MAX_COPY_BYTES:
            return
        try:
            publish_file(self._path(key, ".copy"), sealed(payload))
        except OSError:
            return

    def _path(self, key: str, suffix: str) -> str:
        return str(self._folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + suffix))


def sealed(payload: bytes) -> bytes:
    """`payload` with its SHA-256 before it, as a copy is kept on disk (the node's, the compile folder's)."""
    return hashlib.sha256(payload).digest() + payload


def read_sealed(path: str) -> bytes | None:
    """The payload kept at `path` by `sealed`, or None: missing, a link, not this user's alone, over MAX_COPY_BYTES,
    or not matching its digest (cut short, changed on disk); never blocks."""
    try:
        data = read_user_bytes(path, _DIGEST_BYTES + MAX_COPY_BYTES, own_only=True)
    except UnsafeFileError:
        return None
    payload = data[_DIGEST_BYTES:]
    return payload if payload and hashlib.sha256(payload).digest() == data[:_DIGEST_BYTES] else None
