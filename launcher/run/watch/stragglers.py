"""Which rank makes the others wait, step after step (docs/CONTRACT.md section 9).

Each rank's usual step is the median of its last 16 steps (launcher/run/watch/progress_file.py): its wall seconds,
and its busy seconds, the main thread's CPU time (a rank waiting in a collective sleeps; one that works does not).
A rank is slow when its usual busy time exceeds the median of the others' by at least SLOW_SECONDS, WORK_SHARE of
their work and STEP_SHARE of their usual step, while the others spend at least half that difference waiting.
Medians: a one-off pause (a checkpoint on rank 0, an evaluation on every rank) is one step among at least
MIN_STEPS and moves none of them; a judgement stands only once it held at two looks in a row with steps between
them. CPU time, not wall time: a rank the machine's other load keeps from running is not called slow.

SlowRankLines says when the line is said: once; again when the set of slow ranks changes, or when a slow rank's
frame (the file and function it spends the time in, not the line) changes, looked at again every RECHECK_SECONDS.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from launcher.run.watch.progress_file import RankProgress

__all__ = ["Straggler", "find_stragglers", "SlowRankLines", "MIN_STEPS", "SLOW_SECONDS", "WORK_SHARE", "STEP_SHARE",
           "RECHECK_SECONDS"]

MIN_STEPS = 6  # the steps each rank must have behind it (its first excluded) before any is judged
SLOW_SECONDS = 0.02
WORK_SHARE = 0.5
STEP_SHARE = 0.1  # of the wall step, which the machine's other load stretches: a small share, so load hides no one
RECHECK_SECONDS = 30.0  # how often a slow rank's frame is sampled again while it stays slow


@dataclass(frozen=True)
class Straggler:
    """A slow rank: its usual busy seconds a step, the others' median, and the usual step."""

    rank: int
    busy: float
    others_busy: float
    step: float

    @property
    def extra(self) -> float:
        return self.busy - self.others_busy


def find_stragglers(progress: Mapping[int, RankProgress]) -> list[Straggler]:
    """The slow ranks among `progress` (global rank -> its progress), by rank; none with fewer than two ranks
    that each have MIN_STEPS steps behind them."""
    usual = {rank: (p.busy_seconds(), p.step_seconds()) for rank, p in progress.items()
             if p.phase == "training" and len(p.ends) > MIN_STEPS}
    judged = {rank: values for rank, values in usual.items() if values[0] is not None and values[1] is not None}
    if len(judged) < 2 or len(judged) < len(progress):
        return []
    found = []
    for rank, (busy, step) in sorted(judged.items()):
        others = [values for other, values in judged.items() if other != rank]
        others_busy = statistics.median(values[0] for values in others)
        others_step = statistics.median(values[1] for values in others)
        extra = busy - others_busy
        waited = others_step - others_busy
        if extra >= max(SLOW_SECONDS, WORK_SHARE * others_busy, STEP_SHARE * others_step) and waited >= extra / 2:
            found.append(Straggler(rank, busy, others_busy, others_step))
    return found


class SlowRankLines:
    """What was said of the slow ranks: each one's frame (`train.py:14 in load_batch`, None: no dump came)."""

    def __init__(self) -> None:
        self._seen: tuple[frozenset[int], int] | None = None  # the slow ranks at the last look, and the steps then
        self._frames: dict[int, str | None] = {}
        self._checked = 0.0

    def look(self, found: list[Straggler], steps: int, now: float,
             frame_of: Callable[[int], str | None]) -> list[tuple[Straggler, str | None]]:
        """The slow ranks to say now, each with its frame (`frame_of` samples a rank's, a few stack dumps)."""
        slow = frozenset(straggler.rank for straggler in found)
        previous, self._seen = self._seen, (slow, steps)
        if previous is None or previous[0] != slow or previous[1] == steps:
            return []  # not settled: the same at two looks in a row, with steps between
        if slow != frozenset(self._frames):  # none slow any more, or other ranks than were named
            self._frames, self._checked = {straggler.rank: frame_of(straggler.rank) for straggler in found}, now
            return [(straggler, self._frames[straggler.rank]) for straggler in found]
        if not slow or now - self._checked < RECHECK_SECONDS:
            return []
        self._checked, said = now, []
        for straggler in found:
            frame, before = frame_of(straggler.rank), self._frames[straggler.rank]
            if frame is not None and before is not None and _function(frame) != _function(before):
                said.append((straggler, frame))
            self._frames[straggler.rank] = frame if frame is not None else before
        return said


def _function(frame: str) -> tuple[str, str]:
    """`train.py:14 in load_batch` as its file and function: ("train.py", "load_batch")."""
    place, _, name = frame.rpartition(" in ")
    return place.rpartition(":")[0], name
