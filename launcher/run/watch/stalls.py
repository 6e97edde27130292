"""A hang, found without a guessed timeout (docs/CONTRACT.md section 9): once a rank has finished a step, no rank
finishing one for HANG_FACTOR times the usual step, at least HANG_FLOOR_SECONDS, at most HANG_CAP_SECONDS.

The floor keeps a one-off pause of a job with short steps (a checkpoint, an evaluation, a compile after the first
step) from being called a hang; the cap makes a job with long steps report within a minute. The line names the
ranks not waiting in a collective, with their frames; a rank compiling is said to be compiling, not hung.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from launcher.run.stacks.stack_report import ranks_text
from launcher.run.watch.progress_file import RankProgress
from launcher.run.watch.rank_frames import RankPlace

__all__ = ["usual_step", "stall_limit", "hang_line", "is_hang", "HANG_FACTOR", "HANG_FLOOR_SECONDS",
           "HANG_CAP_SECONDS"]

HANG_FACTOR = 10
HANG_FLOOR_SECONDS = 30.0
HANG_CAP_SECONDS = 60.0


def usual_step(progress: Mapping[int, RankProgress]) -> float | None:
    """The median of the ranks' usual steps (None: no rank has two steps behind it)."""
    steps = [step for step in (p.step_seconds() for p in progress.values()) if step is not None]
    return statistics.median(steps) if steps else None


def stall_limit(usual: float | None) -> float:
    """How long no rank may finish a step before it is a hang."""
    return min(HANG_CAP_SECONDS, max(HANG_FLOOR_SECONDS, HANG_FACTOR * (usual or 0.0)))


def is_hang(places: Mapping[int, RankPlace]) -> bool:
    """Whether what the ranks do is a hang: not when every rank not waiting is compiling (a compile takes long)."""
    compiling = any(place.compiling is not None for place in places.values())
    return not compiling or any(not place.waiting and place.compiling is None for place in places.values())


def hang_line(places: Mapping[int, RankPlace], stalled: float, usual: float | None, host: str) -> str:
    """`no rank finished a step for 31 s (...): rank 1 on HOST is not waiting in a collective: ...`."""
    step = f"the usual step {usual:.3g} s" if usual is not None else "one step so far"
    head = (f"no rank finished a step for {stalled:.0f} s ({step}; a hang is {stall_limit(usual):.0f} s without "
            f"one)")
    busy = {rank: place for rank, place in places.items() if not place.waiting and place.compiling is None}
    compiling = {rank: place for rank, place in places.items() if place.compiling is not None}
    waiting = sorted(rank for rank, place in places.items() if place.waiting)
    parts = []
    for rank, place in sorted(busy.items()):
        parts.append(f"rank {rank} on {host} is not waiting in a collective: {place.where}")
    for rank, place in sorted(compiling.items()):
        parts.append(f"rank {rank} on {host} is compiling {place.compiling}, not hung")
    if waiting:
        inner = places[waiting[0]].innermost
        what = "" if inner is None else (" in the backward pass (DDP's all_reduce)" if "torch/autograd/" in inner.path
                                         else f" in {inner.name}")
        parts.append(f"{ranks_text(waiting)} wait{'s' if len(waiting) == 1 else ''}{what}")
    if not busy and not compiling:
        parts.append("every rank waits in a collective: a peer on another node, or a lost one, holds them")
    return f"{head}: {'; '.join(parts)}"
