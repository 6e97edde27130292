"""What compile once keeps beyond one node's cache and one attempt (docs/CONTRACT.md section 7).

The compile folder that outlives the job (`--compile-cache-dir`): what a rank compiled (a graph's entry with its
kernels, its AOTAutograd entry, a CPU probe library, torch's profile-guided state) is kept there, one file per key,
by the rank that compiled it, whole (a temporary file, then a rename: no lock files on a shared filesystem); a rank
of any later job, on any node, that needs it reads it instead of compiling. Trusted as torch trusts its cache
folder and ssh `~/.ssh`: the folder must be this user's and writable by no one else, else it is not used; a file is
read only when it is this user's alone, no link, and matches its SHA-256 (`read_sealed`, as the node's copy is
read), else it is a miss. A folder that is full or read-only turns writing off, with one note; it never fails a job. `KeptShare` puts the folder in front
of the job's store for `GraphCache` and `ProbeLibraries`: a key is read from the folder first, then from the job;
what this rank publishes goes to both.

The rest of what a rank needs to skip a compile: inductor's AOTAutograd entry (without it a rank that loads a graph
still traces it first) and torch's profile-guided state of the job (`TORCH_COMPILE_JOB_ID`). torch has a remote
cache class for each (`RemoteAOTAutogradCache`, `RemoteDynamoPGOCache`), off outside Meta unless a config value
says otherwise; where the job has a compile folder, or spans nodes, each is switched on unless the user or the code
set it, and served by `AutogradEntries` and `PgoState`. No claims: an AOTAutograd entry is looked up before the
graph it leads to is compiled, so ranks that start together still trace; a later job, a restart and a node that joins
later load it.

Whether the nodes sign with one secret (`check_same_key`): nodes started one by one whose keys differ (another
home, another ACCEL_COMPILE_CACHE_SECRET) share nothing across nodes, as before, and the job says so once. The
first rank of the job that reaches the store names its key by a hash of it (the key never leaves the node).
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from launcher.contract.names import COMPILE_SECRET_VAR
from launcher.rank.compile_cache.graph_cache import count
from launcher.rank.compile_cache.job_share import MAX_COPY_BYTES, JobShare
from launcher.rank.compile_cache.node_share import read_sealed, sealed
from launcher.shared_files import ownership_problem, publish_file

__all__ = ["FolderShare", "KeptShare", "open_folder", "KeptEntries", "AutogradEntries", "PgoState",
           "switch_on_autograd", "switch_on_pgo", "check_same_key", "KEY_NAME"]

_LAYOUT = "v1"  # entries are named by the sha256 of their key, under this folder, each kept `sealed`
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def open_folder(given: str) -> tuple[FolderShare | None, str]:
    """The folder at `given` (made, mode 0700, where missing), or (None, why it is not used)."""
    real = Path(os.path.realpath(given))
    entries = real / _LAYOUT
    for path in (real, entries):
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            problem = ownership_problem(os.lstat(path), folder=True)
        except OSError as exc:
            problem = f"cannot be made ({exc.strerror or exc})"
        if problem is not None:
            return None, f"{path} {problem}"
    return FolderShare(entries), ""


class FolderShare:
    """Entries by key in a trusted folder: `read`, and `write` until the folder refuses one."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._writing = True

    def read(self, key: str) -> bytes | None:
        """The kept entry of `key`, or None (missing, not this user's alone, a link, too large, or not matching its
        digest), as the node's copy is read."""
        return read_sealed(self._path(key))

    def write(self, key: str, payload: bytes) -> None:
        """Keep `payload` for `key`, whole or not at all; a full or read-only folder turns writing off, once said."""
        if not self._writing or len(payload) > MAX_COPY_BYTES:
            return
        try:
            publish_file(self._path(key), sealed(payload))
        except OSError as exc:
            if exc.errno in _FULL:
                self._writing = False
                print(f"accel-launch: note: the compile folder {self._folder.parent} cannot be written "
                      f"({exc.strerror or exc}): rank {os.environ.get('RANK', '?')} keeps no more in it",
                      file=sys.stderr, flush=True)

    def _path(self, key: str) -> str:
        return str(self._folder / hashlib.sha256(key.encode()).hexdigest())


class KeptShare:
    """The folder in front of the job's share (None: one node, or a store out of reach), as JobShare is called."""

    def __init__(self, folder: FolderShare, job: JobShare | None) -> None:
        self._folder, self._job = folder, job

    def fetch(self, key: str) -> bytes | None:
        """The folder's entry of `key`, else the job's."""
        kept = self._folder.read(key)
        if kept is not None:
            count("folder_entries_loaded")
            return kept
        return self._job.fetch(key) if self._job is not None else None

    def claim(self, key: str) -> str | None:
        """The job's claim; without a job every compile is this rank's (the node's lock keeps it one per node)."""
        return self._job.claim(key) if self._job is not None else None

    def wait_for(self, key: str, claimer: str, seconds: float) -> bytes | None:
        return self._job.wait_for(key, claimer, seconds) if self._job is not None else None

    def publish(self, key: str, payload: bytes) -> None:
        """Keep what this rank compiled in the folder, then in the job's store."""
        self._folder.write(key, payload)
        if self._job is not None:
            self._job.publish(key, payload)

    def give_up(self, key: str) -> None:
        if self._job is not None:
            self._job.give_up(key)


class KeptEntries:
    """The body of a backend of torch's `RemoteCache` on the job's kept share (`_get`/`_put` over bytes, made a
    `RemoteCacheBackend` by launcher.rank.compile_cache.graph_cache.torch_backend)."""

    once = False  # an entry is kept once (an AOTAutograd entry); else each write replaces it (the state of PGO)

    def __init__(self, share: Callable[[], KeptShare | JobShare | None]) -> None:
        super().__init__()  # torch's RemoteCacheBackend names the backend for its statistics
        self._share = share

    def _get(self, key: str) -> bytes | None:
        share = self._share()
        return share.fetch(key) if share is not None else None

    def _put(self, key: str, data: bytes) -> None:
        """Keep `data` (every rank writes its entry: where `once`, only the first is kept)."""
        share = self._share()
        if share is not None and not (self.once and share.fetch(key) is not None):
            share.publish(key, data)


class AutogradEntries(KeptEntries):
    """The AOTAutograd entries: each kept once."""

    once = True


class PgoState(KeptEntries):
    """Torch's profile-guided state of the job: each write replaces it."""


def switch_on_autograd(config: ModuleType) -> None:
    """torch._functorch.config: the remote AOTAutograd cache on, unless the user or the code chose."""
    if getattr(config, "enable_remote_autograd_cache", False) is None:
        config.enable_remote_autograd_cache = True


def switch_on_pgo(config: ModuleType) -> None:
    """torch._dynamo.config: the remote profile-guided state on, unless the user or the code chose."""
    if getattr(config, "automatic_dynamic_remote_pgo", False) is None:
        config.automatic_dynamic_remote_pgo = True


KEY_NAME = "accel-compile/key-name"
KEY_SAID = "accel-compile/key-differs-said"


def check_same_key(store: Any, secret: bytes, key_file: str | None) -> bool:
    """Whether this rank's secret is the one the job's first rank named; one line on stderr, once per job, if not."""
    mine = hashlib.sha256(b"accel-launch key name\0" + secret).hexdigest()[:16]
    first = store.compare_set(KEY_NAME, "", mine).decode("ascii", "replace")
    if first == mine:
        return True
    if store.add(KEY_SAID, 1) == 1:
        where = f"the key in {key_file}" if key_file else f"its {COMPILE_SECRET_VAR}"
        print(f"accel-launch: note: this node ({os.uname().nodename}) signs compiled graphs with {where}, another "
              f"node with another: each node compiles for itself; give every node one home folder, or set the same "
              f"{COMPILE_SECRET_VAR} on every node", file=sys.stderr, flush=True)
    return False
