"""Ask a node's ranks for their stacks: STACKS_SIGNAL to each rank that can answer it, then each one's dump read
from its file in the launcher's folder, and its compile state beside it (docs/CONTRACT.md section 8).

A rank can answer when it runs, catches the signal, some thread of it does not block it (/proc: State, SigCgt,
SigBlk), and its dump file is still the one its faulthandler writes to (dump_file.py). One that does not catch it (a
rank still starting, a `--no-python` program, a rank whose Python is ending) is never sent it, as its default action
would end the rank; nor is a stopped one, which could not answer.

faulthandler writes a dump from its C handler, which blocks the signal while it runs (sigaction without SA_NODEFER):
a dump is whole once its file grew and the signal is neither pending (/proc: ShdPnd) nor blocked by a thread that
did not block it before it was sent. A rank whose signal was delivered and whose file did not grow within
ANSWER_SECONDS handles the signal with a handler of its own. On a busy machine a rank may wait for a CPU before it
runs the handler, or be preempted while it writes: while the signal is pending in a runnable rank, or a thread is
inside the handler, the wait goes on, up to BUSY_SECONDS.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from launcher.contract.names import STACKS_FILE, STACKS_SIGNAL
from launcher.rank.compile_state import read_compile_state
from launcher.run.stacks.dump_file import dump_file_problem, dump_size, read_dump_text, read_header
from launcher.signal_rules import signal_name

__all__ = ["RankAnswer", "ask_ranks", "signal_state", "ANSWER_SECONDS", "BUSY_SECONDS"]

ANSWER_SECONDS = 2.0
BUSY_SECONDS = 30.0
# Shorter than PROCESS_CHECK_SECONDS (launcher/contract/names.py): a user waits on `stacks`, and each look only
# checks the size of the ranks' dump files.
_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class RankAnswer:
    """One rank's answer: its dump, or why there is none; and its compile state (None: it never compiled)."""

    rank: int
    pid: int
    dump: str | None = None
    silent: str | None = None
    compile: Mapping[str, object] | None = None


@dataclass(frozen=True)
class _Asked:
    """A rank sent the signal: its file and its size then, the threads that did not block the signal, when."""

    pid: int
    path: Path
    before: int
    unblocked: frozenset[int]
    sent: float


def ask_ranks(ranks: Mapping[int, int], folder: Path, answer_seconds: float = ANSWER_SECONDS) -> list[RankAnswer]:
    """Each rank's answer (`ranks`: global rank -> pid), by rank; the ranks go on."""
    asked: dict[int, _Asked] = {}
    silent: dict[int, str] = {}
    for rank, pid in sorted(ranks.items()):
        path = folder / STACKS_FILE.format(rank=rank)
        state, header, blocked = signal_state(pid), read_header(path), _blocked_by_thread(pid)
        why = _cannot_answer(state, blocked, header is not None and header[0] == pid)
        why = why or dump_file_problem(path, pid, header)
        before = dump_size(path)
        why = why or _send(pid)
        if why is None:
            unblocked = frozenset(tid for tid, blocks in blocked.items() if not blocks)
            asked[rank] = _Asked(pid, path, before, unblocked, time.monotonic())
        else:
            silent[rank] = why
    dumps = _wait_for_dumps(asked, answer_seconds, silent)
    return [RankAnswer(rank, pid, dumps.get(rank), silent.get(rank), read_compile_state(folder, rank))
            for rank, pid in sorted(ranks.items())]


def _cannot_answer(state: SignalState | None, blocked: Mapping[int, bool], registered: bool) -> str | None:
    """Why the rank cannot answer the signal (None: it can); `registered`: its dump file names it."""
    name = signal_name(STACKS_SIGNAL)
    if state is None or state.gone or not blocked:
        return "already gone"
    if state.stopped:
        return _STOPPED
    if state.ignored:
        return f"ignores {name}"
    if not state.caught and registered:
        return (f"no longer catches {name}: it is ending (Python's exit undoes faulthandler), or its program "
                "unregistered it")
    if not state.caught:
        return f"does not catch {name}: still starting, or a program of its own (--no-python)"
    if all(blocked.values()):
        return f"blocks {name} in every thread"
    return None


_STOPPED = ("is stopped (SIGSTOP, SIGTSTP, or a debugger holds it): a stopped process answers nothing until it is "
            "continued")


def _send(pid: int) -> str | None:
    try:
        os.kill(pid, STACKS_SIGNAL)
    except ProcessLookupError:
        return "already gone"
    except PermissionError:
        return "not this user's process"
    return None


def _wait_for_dumps(asked: Mapping[int, _Asked], answer_seconds: float, silent: dict[int, str]) -> dict[int, str]:
    """The dumps that came, by rank, each read once its handler returned; why each other one did not, in
    `silent`."""
    dumps: dict[int, str] = {}
    left = dict(asked)
    while left:
        for rank, one in list(left.items()):
            state = signal_state(one.pid)  # before the file: a handler that returned wrote it all
            grown, waited = dump_size(one.path) > one.before, time.monotonic() - one.sent
            live = state is not None and not state.gone
            pending = live and state.pending  # type: ignore[union-attr]
            if pending:  # not delivered yet: a rank that waits for a CPU gets it in time
                busy = state.runnable  # type: ignore[union-attr]
            else:  # a thread inside the handler (looked at only once it matters: the threads' files cost)
                busy = live and (grown or waited >= answer_seconds) and _writing(one)
            if grown and not pending and not busy:
                dumps[rank] = read_dump_text(one.path, one.before) or ""
            elif waited >= (BUSY_SECONDS if busy else answer_seconds):
                text = read_dump_text(one.path, one.before) if grown else None
                if text:
                    dumps[rank] = text  # what a rank still writing after BUSY_SECONDS wrote so far
                else:
                    silent[rank] = _no_answer(state, answer_seconds)
            else:
                continue
            del left[rank]
        if left:
            time.sleep(_POLL_SECONDS)
    return dumps


def _writing(one: _Asked) -> bool:
    """Whether a thread of the rank is inside the signal's handler: it blocks the signal, as it did not before."""
    return any(blocks and tid in one.unblocked for tid, blocks in _blocked_by_thread(one.pid).items())


def _no_answer(state: SignalState | None, answer_seconds: float) -> str:
    """Why a rank that was sent the signal wrote nothing, from how it stands now."""
    name = signal_name(STACKS_SIGNAL)
    if state is None or state.gone:
        return f"ended before it answered {name}"
    if state.stopped:
        return _STOPPED
    if state.pending and state.state == "D":
        return (f"did not answer {name} within {answer_seconds:g} s: it is in uninterruptible sleep (D state: a "
                "disk, a network file system, a device), and answers once it leaves it")
    if state.pending:
        return f"did not answer {name} within {BUSY_SECONDS:g} s: it waited for a CPU all that time"
    return f"did not answer {name} within {answer_seconds:g} s: its program has a handler of its own for that signal"


@dataclass(frozen=True)
class SignalState:
    """One look at a process (/proc/PID/status) and the stacks signal: its state letter (R, S, D, T, t, Z), the
    signal's disposition, and whether it waits to be delivered (sent to the process, not yet taken by a thread)."""

    state: str
    ignored: bool
    caught: bool
    pending: bool

    @property
    def gone(self) -> bool:
        """The process ended (a zombie)."""
        return self.state in ("Z", "X")

    @property
    def stopped(self) -> bool:
        """The process is stopped (SIGSTOP, SIGTSTP) or held by a debugger: it runs no handler until continued."""
        return self.state in ("T", "t")

    @property
    def runnable(self) -> bool:
        """Running, waiting for a CPU, or in a sleep the signal ends: it runs its handler once it has a CPU."""
        return self.state in ("R", "S")


_BIT = 1 << (STACKS_SIGNAL - 1)


def signal_state(pid: int, signum: int = STACKS_SIGNAL) -> SignalState | None:
    """Process `pid` and signal `signum` (the stacks signal) as /proc has them now; None when the process is gone."""
    bit = 1 << (signum - 1)
    try:
        fields = _fields(Path(f"/proc/{pid}/status"))
        masks = {key: int(fields[key], 16) & bit for key in ("ShdPnd", "SigIgn", "SigCgt")}
        return SignalState(fields["State"][:1], bool(masks["SigIgn"]), bool(masks["SigCgt"]), bool(masks["ShdPnd"]))
    except (OSError, KeyError, ValueError):
        return None


def _blocked_by_thread(pid: int) -> dict[int, bool]:
    """Each thread of process `pid` (by id), and whether it blocks the stacks signal now ({}: the process is gone)."""
    blocked = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            blocked[int(task.name)] = bool(int(_fields(task / "status")["SigBlk"], 16) & _BIT)
        except (OSError, KeyError, ValueError):  # a thread that ended meanwhile
            continue
    return blocked


def _fields(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields
