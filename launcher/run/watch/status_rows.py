"""`accel-launch status`'s rows: one per rank of a running job (docs/CONTRACT.md section 9), from what each rank's
node saw of it (launcher/rank/rank_facts.py): this node's ranks looked at here, another node's as its status
publisher last wrote them in the job's store (node_rows.py); nothing is asked of a rank.

A rank's phase: `starting` (no progress file yet), `importing` (its program runs, no optimizer step yet),
`compiling graph N` (inside torch.compile), `training`, `waiting` (training, its last step older than WAIT_FACTOR
usual steps and its main thread asleep on a futex, as in a collective), `exited`. `work %`: the share of its usual
step its main thread spends on the CPU; the rest it waits (in collectives, for the device, for I/O). The odd ones
first, as `stacks` groups them: a phase that differs from the most ranks', or a rank found slow (stragglers.py),
among every rank shown. Ages are measured on the rank's own node, from when its facts were taken.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from launcher.escaped import short_line
from launcher.rank.rank_facts import RankFacts, RankLooks
from launcher.run.watch.progress_file import RankProgress, parse_progress
from launcher.run.watch.stragglers import find_stragglers

__all__ = ["StatusRow", "local_facts", "status_rows", "format_rows", "CPU_SAMPLE_SECONDS"]

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
        return (str(self.rank), short_line(self.host), str(self.pid), self.phase + (" (odd)" if self.odd else ""),
                str(self.steps), _number(self.step_seconds), "-" if self.work is None else f"{100 * self.work:.0f}",
                _number(self.age, " s ago"),
                "-" if self.cpu_percent is None else f"{self.cpu_percent:.0f}",
                "-" if self.memory is None else f"{self.memory / 2**20:.0f} MiB")


def local_facts(ranks: Mapping[int, int], folder: Path, host: str,
                sample_seconds: float = CPU_SAMPLE_SECONDS) -> list[RankFacts]:
    """The facts of this node's ranks (global rank -> pid) answering in `folder`, their CPU over `sample_seconds`."""
    looks = RankLooks(str(folder), host)
    looks.take(ranks)  # the first sample: CPU is measured from here
    time.sleep(sample_seconds)
    return looks.take(ranks)


def status_rows(facts: Sequence[RankFacts]) -> list[StatusRow]:
    """One row per rank, the odd ones first, then by rank."""
    progress = {fact.rank: parse_progress(fact.progress) for fact in facts}
    phases = {fact.rank: _phase(progress[fact.rank], fact) for fact in facts}
    usual, _ = Counter(phases.values()).most_common(1)[0] if phases else ("", 0)
    slow = {straggler.rank for straggler in find_stragglers(progress)}
    rows = []
    for fact in facts:
        p = progress[fact.rank]
        step, busy = p.step_seconds(), p.busy_seconds()
        rows.append(StatusRow(fact.rank, fact.host, fact.pid, phases[fact.rank], p.steps, step,
                              min(1.0, busy / step) if step and busy is not None else None,
                              fact.taken - p.last_step if p.last_step is not None else None, fact.cpu_percent,
                              fact.memory, odd=len(facts) > 1 and (phases[fact.rank] != usual or fact.rank in slow)))
    return sorted(rows, key=lambda row: (not row.odd, row.rank))


def format_rows(rows: list[StatusRow]) -> list[str]:
    """An aligned table with its headings."""
    table = [_HEADINGS, *(row.cells() for row in rows)]
    widths = [max(len(line[column]) for line in table) for column in range(len(_HEADINGS))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table]


def _phase(progress: RankProgress, fact: RankFacts) -> str:
    if not fact.alive or progress.phase == "exited":
        return "exited"
    if fact.compiling is not None:
        return f"compiling graph {fact.compiling + 1 if fact.compiling >= 0 else '?'}"
    step = progress.step_seconds()
    if (progress.phase == "training" and step is not None and progress.last_step is not None
            and fact.taken - progress.last_step > max(1.0, WAIT_FACTOR * step) and fact.asleep):
        return "waiting"
    return progress.phase


def _number(value: float | None, unit: str = "") -> str:
    """Seconds as a person reads them: three significant digits, whole seconds from 100 on, never an exponent."""
    if value is None:
        return "-"
    if value >= 100:
        text = f"{value:.0f}"
    elif value >= 0.001:
        text = f"{value:.3g}"
    else:
        text = "<0.001" if value > 0 else "0"
    return text + unit
