"""Which rank makes the others wait, step after step (docs/CONTRACT.md section 9).

Each rank's usual step is the median of its last 16 steps (launcher/run/watch/progress_file.py): its wall seconds,
and its busy seconds, the main thread's CPU time (a rank waiting in a collective sleeps; one that works does not).
A rank is slow when its usual busy time exceeds the median of the others' by at least SLOW_SECONDS, WORK_SHARE of
their work and STEP_SHARE of their usual step, while the others spend at least half that difference waiting.
Medians: a one-off pause (a checkpoint on rank 0, an evaluation on every rank) is one step among at least
MIN_STEPS and moves none of them; a judgement stands only once it held at two looks in a row with steps between
them. CPU time, not wall time: a rank the machine's other load keeps from running is not called slow.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from launcher.run.watch.progress_file import RankProgress

__all__ = ["Straggler", "find_stragglers", "MIN_STEPS", "SLOW_SECONDS", "WORK_SHARE", "STEP_SHARE"]

MIN_STEPS = 6  # the steps each rank must have behind it (its first excluded) before any is judged
SLOW_SECONDS = 0.02
WORK_SHARE = 0.5
STEP_SHARE = 0.1  # of the wall step, which the machine's other load stretches: a small share, so load hides no one


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
