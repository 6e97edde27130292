"""A rank's progress as the launcher reads it from the rank's file (launcher/rank/progress.py, which reads it too:
without blocking, a regular file only, a bounded number of bytes); a file that is missing, short or not ours reads
as no progress yet. `accel-launch status` reads another node's ranks from the same bytes, as their node
published them (`parse_progress`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from launcher.rank.progress import HEADER, MAGIC, PHASES, RING, SLOT, read_progress_record

__all__ = ["RankProgress", "read_progress", "parse_progress", "STARTING"]

STARTING = PHASES[0]
_RECENT = 16  # the steps whose median is a rank's usual step: a one-off pause among them does not move it


@dataclass(frozen=True)
class RankProgress:
    """What a rank last wrote: its phase, its steps, when its program started; its recent steps' ends and the
    main thread's CPU seconds at each (oldest first, consecutive steps only)."""

    phase: str = STARTING
    steps: int = 0
    started: float = 0.0
    ends: tuple[float, ...] = ()
    cpu: tuple[float, ...] = ()

    @property
    def last_step(self) -> float | None:
        """When its last step ended (time.time), None before the first."""
        return self.ends[-1] if self.ends else None

    def step_seconds(self) -> float | None:
        """The median of its recent steps' wall seconds (None: fewer than two steps seen)."""
        return _median_gaps(self.ends)

    def busy_seconds(self) -> float | None:
        """The median of its recent steps' main-thread CPU seconds: the time a step is not spent waiting (in a
        collective, among others); None with fewer than two steps seen."""
        return _median_gaps(self.cpu)


def read_progress(folder: Path, rank: int) -> RankProgress:
    """Rank `rank`'s progress from its file in `folder` (read beside its writer: `read_progress_record`);
    RankProgress() when there is none readable."""
    return parse_progress(read_progress_record(str(folder), rank))


def parse_progress(data: bytes) -> RankProgress:
    """A rank's progress from its record's bytes (read here, or published by its node: launcher/rank/node_summary.py);
    RankProgress() when they are short or not the rank's format."""
    if len(data) < HEADER.size:
        return RankProgress()
    magic, phase, steps, started = HEADER.unpack_from(data)
    if magic != MAGIC or not 0 <= phase < len(PHASES):
        return RankProgress()
    slots = {}
    for index in range(min(RING, (len(data) - HEADER.size) // SLOT.size)):
        number, end, cpu = SLOT.unpack_from(data, HEADER.size + index * SLOT.size)
        if number and number % RING == index:
            slots[number] = (end, cpu)
    steps = max(steps, *slots) if slots else steps  # the newest slot's number (the header's is its phase's)
    recent = _consecutive(slots, steps)
    return RankProgress(PHASES[phase], steps, started, tuple(slots[n][0] for n in recent),
                        tuple(slots[n][1] for n in recent))


def _consecutive(slots: dict[int, tuple[float, float]], steps: int) -> list[int]:
    """The step numbers from the newest back, while each is there (a slot rewritten meanwhile ends the run)."""
    numbers = []
    number = steps
    while number in slots and len(numbers) < RING:
        numbers.append(number)
        number -= 1
    return numbers[::-1]


def _median_gaps(values: tuple[float, ...]) -> float | None:
    recent = values[-(_RECENT + 1):]
    if len(recent) < 2:
        return None
    return statistics.median(later - earlier for earlier, later in zip(recent, recent[1:]))
