"""Where a rank is, read from its stack dump (launcher/run/stacks/): waiting in a collective or not, compiling, and
the frame it spends its time in.

A rank waits in a collective when the innermost frame of its main thread is torch.distributed's (an all_reduce,
a barrier, a work's wait) or torch.autograd's (DDP's reducer waits for its buckets' all_reduce at the end of the
backward pass, inside it). What spends a rank's time is found by sampling: a few dumps of it and of a peer, the
frame of its own code that it is seen in most more often than the peer is.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from launcher.run.stacks import RankAnswer, ask_ranks
from launcher.run.stacks.stack_report import Frame, is_user_frame, main_thread, read_dump

__all__ = ["RankPlace", "place_of", "busiest_frame", "short_frame", "COLLECTIVE_PATHS"]

COLLECTIVE_PATHS = ("torch/distributed/", "torch/autograd/")
_SAMPLES = 4
_SAMPLE_GAP = 0.02


class RankPlace:
    """A rank's place in one dump: `waiting` (in a collective), `compiling` (the frame dynamo compiles), `where`
    (`train.py:14 in load_batch`, with the innermost frame when it is a library's)."""

    def __init__(self, answer: RankAnswer) -> None:
        self.rank = answer.rank
        state = answer.compile or {}
        self.compiling: str | None = None
        if state.get("state") == "compiling":
            frame = state.get("frame")
            self.compiling = f"graph {int(state.get('graphs') or 0) + 1} of {short_frame(frame)}" \
                if isinstance(frame, str) else f"graph {int(state.get('graphs') or 0) + 1}"
        thread = main_thread(read_dump(answer.dump)) if answer.dump else None
        self.innermost: Frame | None = thread[0] if thread else None
        self.own: Frame | None = next((frame for frame in thread if is_user_frame(frame)), None) if thread else None
        self.waiting = self.compiling is None and self.innermost is not None and any(
            part in self.innermost.path for part in COLLECTIVE_PATHS)
        self.silent = answer.silent

    @property
    def where(self) -> str:
        """`train.py:14 in load_batch`, or with the library frame it is inside; why there is no stack."""
        if self.innermost is None:
            return f"no stack ({self.silent})" if self.silent else "no Python frame"
        if self.own is None or self.own == self.innermost:
            return self.innermost.short()
        return f"{self.own.short()}, inside {self.innermost.name} ({self.innermost.short().rsplit(' in ', 1)[0]})"


def place_of(answers: list[RankAnswer]) -> dict[int, RankPlace]:
    """Each answering rank's place, by rank."""
    return {answer.rank: RankPlace(answer) for answer in answers}


def busiest_frame(rank: int, peer: int | None, pids: Mapping[int, int], folder: Path,
                  closed: threading.Event) -> str | None:
    """The frame of `rank`'s own code it is seen in most, beyond how often `peer` is seen there, over a few dumps
    of both (None: no dump came, or the watch was `closed` meanwhile)."""
    asked = {r: pids[r] for r in (rank, peer) if r is not None and r in pids}
    seen: dict[int, Counter[tuple[str, str]]] = {r: Counter() for r in asked}
    lines: Counter[str] = Counter()  # the lines of `rank`'s frames, to show the one it is seen at most
    for _ in range(_SAMPLES):
        if closed.is_set():
            return None
        for answer in ask_ranks(asked, folder, answer_seconds=1.0):
            place = RankPlace(answer)
            frame = place.own or place.innermost
            if frame is not None:
                seen[answer.rank][(frame.path, frame.name)] += 1
                if answer.rank == rank:
                    lines[frame.short()] += 1
        time.sleep(_SAMPLE_GAP)
    mine = seen.get(rank)
    if not mine:
        return None
    theirs = seen.get(peer, Counter()) if peer is not None else Counter()
    path, name = max(mine, key=lambda key: (mine[key] - theirs[key], mine[key]))
    return max((line for line in lines if line.endswith(f" in {name}") and _same_file(line, path)),
               key=lambda line: lines[line], default=None)


def _same_file(line: str, path: str) -> bool:
    return Path(path).name in line.rsplit(":", 1)[0] or line.startswith(path)


def short_frame(frame: str) -> str:
    """`/path/train.py:42 forward` as `train.py:42 forward`."""
    place, _, name = frame.rpartition(" ")
    return f"{Path(place).name} {name}" if place else frame
