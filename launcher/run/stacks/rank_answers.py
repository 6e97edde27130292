"""Ask a node's ranks for their stacks: STACKS_SIGNAL to each rank that can answer it, then each one's dump read
from its file in the launcher's folder, and its compile state beside it (docs/CONTRACT.md section 8).

A rank can answer when it catches the signal and some thread of it does not block it (/proc: SigCgt, SigBlk);
one that does not catch it (a rank still starting, a `--no-python` program) is never sent it, as its default action
would end the rank. faulthandler writes a dump at once from its C handler: a rank whose file has not grown within
ANSWER_SECONDS handles the signal with a handler of its program's own. A dump is whole once its file stopped
growing for SETTLED_SECONDS.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from launcher.contract.names import COMPILE_STATE_FILE, STACKS_FILE, STACKS_SIGNAL
from launcher.signal_rules import signal_name

__all__ = ["RankAnswer", "ask_ranks", "read_compile_state", "ANSWER_SECONDS"]

ANSWER_SECONDS = 2.0
SETTLED_SECONDS = 0.1
_POLL_SECONDS = 0.02
_DUMP_BYTES = 1 << 20  # faulthandler writes at most 100 threads of 100 frames: far less than this


@dataclass(frozen=True)
class RankAnswer:
    """One rank's answer: its dump, or why there is none; and its compile state (None: it never compiled)."""

    rank: int
    pid: int
    dump: str | None = None
    silent: str | None = None
    compile: Mapping[str, object] | None = None


def ask_ranks(ranks: Mapping[int, int], folder: Path, answer_seconds: float = ANSWER_SECONDS) -> list[RankAnswer]:
    """Each rank's answer (`ranks`: global rank -> pid), by rank; the ranks go on."""
    asked: dict[int, int] = {}  # rank -> its file's size before the signal
    silent: dict[int, str] = {}
    for rank, pid in sorted(ranks.items()):
        path = folder / STACKS_FILE.format(rank=rank)
        before = _size(path)
        why = _cannot_answer(pid) or _send(pid)
        if why is None:
            asked[rank] = before
        else:
            silent[rank] = why
    dumps = _wait_for_dumps(folder, asked, answer_seconds)
    waited = f"{answer_seconds:g} s"
    for rank in asked.keys() - dumps.keys():
        silent[rank] = (f"did not answer {signal_name(STACKS_SIGNAL)} within {waited}: its program has a handler of "
                        "its own for that signal, or closed the file it writes to")
    return [RankAnswer(rank, pid, dumps.get(rank), silent.get(rank), read_compile_state(folder, rank))
            for rank, pid in sorted(ranks.items())]


def read_compile_state(folder: Path, rank: int) -> Mapping[str, object] | None:
    """What the rank last wrote of its compiles (launcher/rank/compile_state.py); None when nothing readable."""
    try:
        state = json.loads((folder / COMPILE_STATE_FILE.format(rank=rank)).read_bytes()[:4096])
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _cannot_answer(pid: int) -> str | None:
    """Why the rank cannot answer the signal, from /proc (None: it can)."""
    name = signal_name(STACKS_SIGNAL)
    bit = 1 << (STACKS_SIGNAL - 1)
    try:
        status = _status_masks(pid)
        blocked = [_status_masks(pid, task)["SigBlk"] for task in os.listdir(f"/proc/{pid}/task")]
    except (OSError, KeyError, ValueError):
        return "already gone"
    if status.get("State", 0) == ord("Z"):
        return "already gone"
    if status["SigIgn"] & bit:
        return f"ignores {name}"
    if not status["SigCgt"] & bit:
        return f"does not catch {name}: still starting, or a program of its own (--no-python)"
    if blocked and all(mask & bit for mask in blocked):
        return f"blocks {name} in every thread"
    return None


def _status_masks(pid: int, task: str | None = None) -> dict[str, int]:
    where = f"/proc/{pid}/task/{task}/status" if task else f"/proc/{pid}/status"
    masks = {}
    for line in Path(where).read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("SigBlk", "SigIgn", "SigCgt"):
            masks[key] = int(value.strip(), 16)
        elif key == "State":
            masks[key] = ord(value.strip()[:1] or "?")
    return masks


def _send(pid: int) -> str | None:
    try:
        os.kill(pid, STACKS_SIGNAL)
    except ProcessLookupError:
        return "already gone"
    except PermissionError:
        return "not this user's process"
    return None


def _wait_for_dumps(folder: Path, asked: Mapping[int, int], answer_seconds: float) -> dict[int, str]:
    """The dumps that came, by rank: each once its file grew and then stayed the same for SETTLED_SECONDS."""
    dumps: dict[int, str] = {}
    grown: dict[int, tuple[int, float]] = {}  # rank -> (size, when it was last seen to change)
    deadline = time.monotonic() + answer_seconds
    while len(dumps) < len(asked):
        now = time.monotonic()
        for rank, before in asked.items():
            if rank in dumps:
                continue
            path = folder / STACKS_FILE.format(rank=rank)
            size = _size(path)
            if size > before and grown.get(rank, (0, 0.0))[0] != size:
                grown[rank] = (size, now)
            elif rank in grown and now - grown[rank][1] >= SETTLED_SECONDS:
                dumps[rank] = _read(path, before)
        if now >= deadline + SETTLED_SECONDS:
            break
        time.sleep(_POLL_SECONDS)
    return dumps


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path, offset: int) -> str:
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read(_DUMP_BYTES).decode("utf-8", "replace")
