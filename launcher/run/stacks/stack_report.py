"""Ranks' stacks as the user reads them: identical stacks once, with the ranks that share them; the ranks whose
stack differs from the majority's first, named as the odd ones out, each with its innermost frame of the user's
code (`rank 1: train.py:88 in load_batch`); a rank inside torch.compile said to be compiling; a rank that did not
answer named with the reason.

Read from faulthandler's dump of a rank's threads (`read_dump`): each thread's frames, innermost first, and which
frames are the user's own code (not the standard library, not an installed package, not the launcher). The
launcher's own threads in a rank (its watch for the launcher's death, launcher/rank/launcher_link.py) are left out,
of the summary, the grouped stacks and the dumps as kept (`program_dump`).
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from launcher.run.stacks.rank_answers import RankAnswer

__all__ = ["StackGroup", "group_stacks", "summary_lines", "stack_lines", "ranks_text", "Frame", "Thread",
           "read_dump", "program_dump", "is_user_frame", "main_thread"]

_RUNPY = ("<frozen runpy>", "runpy.py")
_THREADING = "/threading.py"


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


_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):$")
_FRAME = re.compile(r'^  File "(.*)", line (\d+|\?\?\?) in (.*)$')
_ROOT = Path(__file__).resolve().parents[3]
_OURS = tuple(f"{_ROOT / package}/" for package in ("launcher", "accelerators"))  # the bootstrap's frames, and ours
_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_PACKAGE_FOLDERS = ("/site-packages/", "/dist-packages/")


@dataclass(frozen=True, order=True)
class Frame:
    """One line of a stack: `File "path", line N in name`."""

    path: str
    line: str
    name: str

    def short(self) -> str:
        """`train.py:88 in load_batch` for the user's code, `torch/distributed/distributed_c10d.py:2951 in
        all_reduce` for a package's, the full path otherwise."""
        return f"{short_path(self.path, is_user_frame(self))}:{self.line} in {self.name}"


Thread = tuple[Frame, ...]  # innermost frame first, as faulthandler writes them


def read_dump(text: str) -> tuple[Thread, ...]:
    """Every thread of the program with a Python frame, in faulthandler's order; a thread without one (gloo's, the
    store's) and the launcher's own are left out."""
    return tuple(thread for thread, _lines in _blocks(text) if thread and not _launchers(thread))


def program_dump(text: str) -> str:
    """faulthandler's dump as it was written, without the launcher's own threads."""
    return "\n".join(line for thread, lines in _blocks(text) if not _launchers(thread) for line in lines)


def _blocks(text: str) -> list[tuple[Thread, list[str]]]:
    """Each thread's frames and its lines as written (the lines before the first thread, with no frame)."""
    blocks: list[tuple[list[Frame], list[str]]] = [([], [])]
    for line in text.splitlines():
        if _THREAD.match(line):
            blocks.append(([], []))
        found = _FRAME.match(line)
        if found and len(blocks) > 1:
            blocks[-1][0].append(Frame(*found.groups()))
        blocks[-1][1].append(line)
    return [(tuple(frames), lines) for frames, lines in blocks if lines]


def _launchers(thread: Thread) -> bool:
    """Whether a thread is the launcher's own: the function it was started with (the frame above threading's) is."""
    frames = [frame for frame in thread if not frame.path.endswith(_THREADING)]
    return bool(frames) and len(frames) < len(thread) and frames[-1].path.startswith(_OURS)


def main_thread(threads: tuple[Thread, ...]) -> Thread | None:
    """The thread that runs the program: the one that runs a module's body (the bootstrap's, the program's)."""
    for thread in threads:
        if any(frame.name == "<module>" for frame in thread):
            return thread
    return threads[0] if threads else None


def is_user_frame(frame: Frame) -> bool:
    """Whether a frame is the user's own code."""
    path = frame.path
    if path.startswith("<") or path.startswith(_OURS) or any(folder in path for folder in _PACKAGE_FOLDERS):
        return False
    return not path.startswith(_LIBRARIES)


def short_path(path: str, user: bool) -> str:
    """The file's name for the user's code; from the package on for an installed one or the standard library's."""
    if user:
        return Path(path).name
    for folder in _PACKAGE_FOLDERS:
        if folder in path:
            return path.split(folder, 1)[1]
    library = next((folder for folder in _LIBRARIES if path.startswith(folder + "/")), None)
    return path[len(library) + 1:] if library is not None else path
