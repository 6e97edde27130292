"""What `accel-launch status` shows of a node's ranks, taken on their own node (docs/CONTRACT.md section 9): each
rank's progress record as it wrote it (launcher/rank/progress.py), its compile state, whether it still runs,
whether its main thread sleeps on a futex (as in a collective), its CPU share since the last look and its resident
memory (psutil). The status command takes them for its node's ranks, and each node's status publisher
(launcher/rank/status_publisher.py) for its own node's, so that a rank reads alike wherever it is shown.

Every file is read without blocking, a regular file only and a bounded number of bytes (launcher/shared_files.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from launcher.contract.names import STACKS_DIR_VAR
from launcher.rank.compile_state import read_compile_state
from launcher.rank.progress import read_progress_record

__all__ = ["RankFacts", "RankLooks", "bootstrap_rank", "BOOTSTRAP"]

BOOTSTRAP = "launcher.rank.bootstrap"  # the module every rank runs first (`python -m`)


@dataclass(frozen=True)
class RankFacts:
    """One rank as its node saw it at `taken` (that node's time.time(): ages are measured from it, so that the
    clocks of two nodes need not agree)."""

    rank: int
    pid: int
    host: str
    taken: float
    progress: bytes = b""  # its progress record as written (b"": none yet)
    compiling: int | None = None  # inside torch.compile: its count of graphs compiled before; None: not compiling
    alive: bool = True
    asleep: bool = False  # its main thread sleeps on a futex (a collective's, a lock's)
    cpu_percent: float | None = None  # since the previous look (None at the first)
    memory: int | None = None  # resident bytes


class RankLooks:
    """Looks at a node's ranks, again and again: each look's CPU share is measured since the one before."""

    def __init__(self, folder: str, host: str) -> None:
        self._folder = folder
        self._host = host
        self._processes: dict[int, psutil.Process | None] = {}

    def take(self, ranks: Mapping[int, int]) -> list[RankFacts]:
        """The facts of the ranks (global rank -> pid), by rank."""
        seen = {pid: pid in self._processes for pid in ranks.values()}
        self._processes = {pid: self._processes[pid] if known else _process(pid) for pid, known in seen.items()}
        now = time.time()
        return [self._facts(rank, pid, now, seen[pid]) for rank, pid in sorted(ranks.items())]

    def _facts(self, rank: int, pid: int, now: float, seen: bool) -> RankFacts:
        process = self._processes[pid]
        alive = process is not None and _running(process)
        cpu = _cpu(process) if alive else None
        return RankFacts(rank, pid, self._host, now, read_progress_record(self._folder, rank), self._compiling(rank),
                         alive, alive and _asleep_on_futex(pid), cpu if seen else None,
                         _memory(process) if alive else None)

    def _compiling(self, rank: int) -> int | None:
        """The rank's graphs compiled before the compile it is in (launcher/rank/compile_state.py); None when it
        is not compiling. A count that is missing or not a number reads as -1."""
        state = read_compile_state(Path(self._folder), rank)
        if state is None or state.get("state") != "compiling":
            return None
        graphs = state.get("graphs")
        return graphs if isinstance(graphs, int) and not isinstance(graphs, bool) and graphs >= 0 else -1


def bootstrap_rank(process: psutil.Process) -> tuple[int, str] | None:
    """The global rank and the launcher's folder of a process that runs the rank's bootstrap, as it started
    (/proc/PID/cmdline and environ); None for any other process, or one that cannot be read (gone, another user's,
    or still in its exec, whose files read empty)."""
    try:
        if BOOTSTRAP not in process.cmdline():
            return None
        environ = process.environ()
    except psutil.Error:
        return None
    rank, folder = environ.get("RANK", ""), environ.get(STACKS_DIR_VAR)
    return (int(rank), folder) if folder is not None and rank.isascii() and rank.isdigit() else None


def _asleep_on_futex(pid: int) -> bool:
    """Whether the rank's main thread sleeps in the kernel's futex wait (a collective's, a lock's)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/wchan", encoding="ascii", errors="replace") as handle:
            return "futex" in handle.read(64)
    except OSError:
        return False


def _process(pid: int) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        process.cpu_percent(None)  # the first sample: psutil measures from here
        return process
    except psutil.Error:
        return None


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cpu(process: psutil.Process | None) -> float | None:
    try:
        return process.cpu_percent(None) if process is not None else None
    except psutil.Error:
        return None


def _memory(process: psutil.Process | None) -> int | None:
    try:
        return process.memory_info().rss if process is not None else None
    except psutil.Error:
        return None
