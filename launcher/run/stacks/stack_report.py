"""Ranks' stacks as the user reads them: identical stacks once, with the ranks that share them; the ranks whose
stack differs from the majority's first, named as the odd ones out, each with its innermost frame of the user's
code (`rank 1: train.py:88 in load_batch`); a rank inside torch.compile said to be compiling; a rank that did not
answer named with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from launcher.run.stacks.dump_text import Frame, Thread, is_user_frame, main_thread, read_dump
from launcher.run.stacks.rank_answers import RankAnswer

__all__ = ["StackGroup", "group_stacks", "summary_lines", "stack_lines", "ranks_text"]

_RUNPY = ("<frozen runpy>", "runpy.py")


@dataclass(frozen=True)
class StackGroup:
    """Ranks whose every thread has the same stack; `odd`: not the majority's."""

    ranks: tuple[int, ...]
    threads: tuple[Thread, ...]
    compile: object | None
    odd: bool = False


def group_stacks(answers: Sequence[RankAnswer]) -> list[StackGroup]:
    """The groups of identical stacks, odd ones out first, then by size (the largest first) and rank."""
    found: dict[tuple, list[RankAnswer]] = {}
    for answer in answers:
        if answer.dump is not None:
            threads = read_dump(answer.dump)
            found.setdefault((tuple(sorted(threads)), _compiling(answer)), []).append(answer)
    groups = [StackGroup(tuple(a.rank for a in members), _ordered(read_dump(members[0].dump or "")), key[1])
              for key, members in found.items()]
    groups.sort(key=lambda group: (-len(group.ranks), group.ranks))
    if len(groups) > 1 and len(groups[0].ranks) > len(groups[1].ranks):
        groups = [StackGroup(g.ranks, g.threads, g.compile, odd=True) for g in groups[1:]] + groups[:1]
    return groups


def summary_lines(answers: Sequence[RankAnswer]) -> list[str]:
    """One line per group of ranks (the odd ones out first), then one per rank that did not answer."""
    groups = group_stacks(answers)
    lines = []
    if len(groups) == 1 and len(groups[0].ranks) > 1:
        lines.append(f"all {len(groups[0].ranks)} ranks that answered share one stack")
    elif len(groups) > 1 and not any(group.odd for group in groups):
        lines.append("no majority: the ranks' stacks differ")
    for group in groups:
        odd = " (the odd one out)" if group.odd and len(group.ranks) == 1 else " (odd ones out)" if group.odd else ""
        lines.append(f"{ranks_text(group.ranks)}{odd}: {_where(group)}")
    lines += [f"rank {answer.rank}: no stack: {answer.silent}" for answer in answers if answer.dump is None]
    return lines


def stack_lines(answers: Sequence[RankAnswer]) -> list[str]:
    """Every group's stacks, all threads, innermost frame first (the launcher's own frames below the program's
    left out)."""
    lines = []
    for group in group_stacks(answers):
        odd = ", odd one out" if group.odd else ""
        lines.append(f"{ranks_text(group.ranks)}{odd}: {len(group.threads)} thread(s) with Python frames")
        for number, thread in enumerate(group.threads, 1):
            lines.append(f"  thread {number}{' (main)' if number == 1 else ''}:")
            lines += [f"    {frame.short()}" for frame in _trimmed(thread)]
    return lines


def ranks_text(ranks: Sequence[int]) -> str:
    """`rank 1` or `ranks 0, 2`."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def _compiling(answer: RankAnswer) -> object | None:
    state = answer.compile
    if state is None or state.get("state") != "compiling":
        return None
    return (state.get("frame"), state.get("recompile"))


def _where(group: StackGroup) -> str:
    """`train.py:88 in load_batch`, with the innermost frame when that is not the user's (the all_reduce it waits
    in), or `compiling train.py:42 forward (recompile 2)`."""
    if group.compile is not None:
        frame, recompile = group.compile  # type: ignore[misc]
        where = _compiled_text(frame) if isinstance(frame, str) else "(a frame dynamo did not name)"
        again = f" (recompile {recompile})" if isinstance(recompile, int) and recompile > 0 else ""
        return f"compiling {where}{again}"
    thread = main_thread(group.threads)
    if thread is None:
        return "no Python frame"
    own = next((frame for frame in thread if is_user_frame(frame)), None)
    innermost = thread[0]
    if own is None:
        return innermost.short()
    if own is innermost:
        return own.short()
    return f"{own.short()}, inside {innermost.name} ({innermost.short().rsplit(' in ', 1)[0]})"


def _compiled_text(frame: str) -> str:
    """`/path/train.py:42 forward` as `train.py:42 forward`."""
    place, _, name = frame.rpartition(" ")
    path, _, line = place.rpartition(":")
    return f"{Frame(path, line, name).short().replace(' in ', ' ')}"


def _ordered(threads: tuple[Thread, ...]) -> tuple[Thread, ...]:
    main = main_thread(threads)
    return tuple([main] if main is not None else []) + tuple(t for t in threads if t is not main)


def _trimmed(thread: Thread) -> Thread:
    """The thread without the outermost frames of the bootstrap and runpy, which run the program."""
    frames = list(thread)
    while len(frames) > 1 and (not is_user_frame(frames[-1]) and
                               (frames[-1].path.endswith(_RUNPY) or "/launcher/rank/" in frames[-1].path)):
        frames.pop()
    return tuple(frames)
