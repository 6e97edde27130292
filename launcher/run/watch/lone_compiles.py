"""A rank that compiles alone once the job is stepping (docs/CONTRACT.md section 9): its graph differs from the
others' (a recompile, or a frame they did not compile), and they wait for it in their next collective. Named when
its compile starts, where the attempt's end (launcher/run/stacks/job_stacks.py, its compile note) counts graphs.

At each of the watch's looks, from every running rank's compile state (launcher/rank/compile_state.py, read as the
stacks report reads it): a rank whose state says `compiling`, with a step of its own behind it (not the first
compile, which every rank does before its first step), while no other rank of the node compiles, still the same
compile (frame and compile count) at consecutive looks ALONE_SECONDS apart, is said once per compile. Never while
another rank compiles too, nor with a rank alone on the node (its peers elsewhere are not seen).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from launcher.run.watch.rank_frames import short_frame

__all__ = ["LoneCompile", "LoneCompiles", "ALONE_SECONDS"]

ALONE_SECONDS = 1.0


@dataclass(frozen=True)
class LoneCompile:
    """One compile of one rank: the frame dynamo compiles (`path:line name`) and its compile count (0: the first)."""

    rank: int
    frame: str | None
    count: int

    def line(self, host: str) -> str:
        """`note: rank 1 on HOST compiles alone (train.py:22 forward, recompile 1) while ...`."""
        where = short_frame(self.frame) if self.frame else "a frame"
        what = f"recompile {self.count}" if self.count else "a frame the other ranks have not compiled"
        why = "; TORCH_LOGS=recompiles says why" if self.count else ""
        return (f"note: rank {self.rank} on {host} compiles alone ({where}, {what}) while the other ranks wait for "
                f"it{why}")


class LoneCompiles:
    """The compile seen alone at the last look, since when, and the compiles already said."""

    def __init__(self) -> None:
        self._alone: tuple[LoneCompile, float] | None = None
        self._said: set[LoneCompile] = set()

    def look(self, states: Mapping[int, Mapping[str, object] | None], steps: Mapping[int, int],
             now: float) -> LoneCompile | None:
        """The compile to say now, if any: `states` is each running rank's compile state, `steps` its steps."""
        compiling = [(rank, state) for rank, state in states.items() if state and state.get("state") == "compiling"]
        seen = None
        if len(states) > 1 and len(compiling) == 1 and steps.get(compiling[0][0], 0) > 0:
            rank, state = compiling[0]
            frame, count = state.get("frame"), state.get("recompile")
            seen = LoneCompile(rank, frame if isinstance(frame, str) else None, count if isinstance(count, int) else 0)
        previous, self._alone = self._alone, None
        if seen is None:
            return None
        since = previous[1] if previous is not None and previous[0] == seen else now
        self._alone = (seen, since)
        if now - since < ALONE_SECONDS or seen in self._said:
            return None
        self._said.add(seen)
        return seen
