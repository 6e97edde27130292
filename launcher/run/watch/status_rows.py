"""`accel-launch status`'s rows: one per rank of a running job on this node (docs/CONTRACT.md section 9), from the
ranks' progress files, their compile state and /proc (CPU and memory, through psutil); nothing is asked of a rank.

A rank's phase: `starting` (no progress file yet), `importing` (its program runs, no optimizer step yet),
`compiling graph N` (inside torch.compile), `training`, `waiting` (training, its last step older than WAIT_FACTOR
usual steps and its main thread asleep on a futex, as in a collective), `exited`. `work %`: the share of its usual
step its main thread spends on the CPU; the rest it waits (in collectives, for the device, for I/O). The odd ones first, as `stacks`
groups them: a phase that differs from the most ranks', or a rank found slow (stragglers.py).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from launcher.run.stacks.rank_answers import read_compile_state
from launcher.run.watch.progress_file import RankProgress, read_progress
from launcher.run.watch.stragglers import find_stragglers

__all__ = ["StatusRow", "status_rows", "format_rows", "CPU_SAMPLE_SECONDS"]

CPU_SAMPLE_SECONDS = 0.5
WAIT_FACTOR = 3
_HEADINGS = ("rank", "host", "pid", "phase", "steps", "s/step", "work %", "last step", "cpu %", "memory")


@dataclass(frozen=True)
class StatusRow:
    rank: int
    host: str
    pid: int
    phase: str
    steps: int
    step_seconds: float | None
    work: float | None  # the share of a step its main thread works, the rest it waits (in collectives)
    age: float | None  # seconds since its last step ended
    cpu_percent: float | None
    memory: int | None  # resident bytes
    odd: bool = False

    def cells(self) -> tuple[str, ...]:
        return (str(self.rank), self.host, str(self.pid), self.phase + (" (odd)" if self.odd else ""),
                str(self.steps), _number(self.step_seconds), "-" if self.work is None else f"{100 * self.work:.0f}",
                _number(self.age, " s ago"),
                "-" if self.cpu_percent is None else f"{self.cpu_percent:.0f}",
                "-" if self.memory is None else f"{self.memory / 2**20:.0f} MiB")


def status_rows(ranks: Mapping[int, int], folder: Path, host: str,
                sample_seconds: float = CPU_SAMPLE_SECONDS) -> list[StatusRow]:
    """The rows of the ranks (global rank -> pid) answering in `folder`, the odd ones first, then by rank."""
    processes = {rank: _process(pid) for rank, pid in ranks.items()}
    for process in processes.values():
        _cpu(process)  # the first sample: psutil measures from here
    time.sleep(sample_seconds)
    progress = {rank: read_progress(folder, rank) for rank in ranks}
    phases = {rank: _phase(progress[rank], folder, rank, processes[rank]) for rank in ranks}
    usual, _ = Counter(phases.values()).most_common(1)[0] if phases else ("", 0)
    slow = {straggler.rank for straggler in find_stragglers(progress)}
    now = time.time()
    rows = []
    for rank, pid in sorted(ranks.items()):
        p, process = progress[rank], processes[rank]
        step, busy = p.step_seconds(), p.busy_seconds()
        rows.append(StatusRow(rank, host, pid, phases[rank], p.steps, step, min(1.0, busy / step) if step and busy
                              is not None else None, now - p.last_step if p.last_step is not None else None, _cpu(process),
                              _memory(process), odd=len(ranks) > 1 and (phases[rank] != usual or rank in slow)))
    return sorted(rows, key=lambda row: (not row.odd, row.rank))


def format_rows(rows: list[StatusRow]) -> list[str]:
    """An aligned table with its headings."""
    table = [_HEADINGS, *(row.cells() for row in rows)]
    widths = [max(len(line[column]) for line in table) for column in range(len(_HEADINGS))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table]


def _phase(progress: RankProgress, folder: Path, rank: int, process: psutil.Process | None) -> str:
    if process is None or progress.phase == "exited":
        return "exited"
    state = read_compile_state(folder, rank) or {}
    if state.get("state") == "compiling":
        graphs = state.get("graphs")
        return f"compiling graph {graphs + 1 if isinstance(graphs, int) else '?'}"
    step = progress.step_seconds()
    if (progress.phase == "training" and step is not None and progress.last_step is not None
            and time.time() - progress.last_step > max(1.0, WAIT_FACTOR * step) and _asleep_on_futex(process)):
        return "waiting"
    return progress.phase


def _asleep_on_futex(process: psutil.Process) -> bool:
    """Whether the rank's main thread sleeps in the kernel's futex wait (a collective's, a lock's)."""
    try:
        with open(f"/proc/{process.pid}/task/{process.pid}/wchan", encoding="ascii", errors="replace") as handle:
            return "futex" in handle.read(64)
    except OSError:
        return False


def _process(pid: int) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process
    except psutil.Error:
        return None


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


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.3g}{unit}"
