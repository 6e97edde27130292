"""The first failed rank: which one started the teardown (the first to exit, by time, never by what it wrote), a
short account of it instead of the engine's long table (docs/CONTRACT.md section 4), and its root cause handed on.

The launcher's own error file (`hand_on_root_cause`): where a parent (a scheduler, an outer launch) set
`TORCHELASTIC_ERROR_FILE` for the launcher itself, a failed job's root cause is written there, as torchrun's
`@record` main writes it.

torchrun hands on the first failed rank's record (torch's `ErrorHandler.dump_error_file`: the rank's JSON,
its `message.errorCode` set to the rank's exit code) and writes nothing when that rank left no record; a
failure of the launch itself (a rendezvous that failed, a stop signal, `--timeout`) is written as torch's
`record_exception` writes an exception: `{"message": {"message": ..., "extraInfo": {"py_callstack": ...,
"timestamp": ...}}}`. docs/CONTRACT.md section 4.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launcher.contract.hosts import this_host
from launcher.contract.names import (ERROR_FILE_VAR, FAILURE_STATUS, REFUSAL_PHRASE, RENDEZVOUS_FAILURE_PHRASE,
                                     START_REFUSAL_PHRASE, VALIDATION_STATUS)
from launcher.run.failure.root_cause import RootCause, clip, read_error_file
from launcher.shared_files import UnsafeFileError, read_user_start

__all__ = ["RankFailure", "ended_how", "tail_lines", "others_text",
           "failure_from_engine", "first_failure", "lost_a_peer", "lost_peer_note", "hand_on_root_cause",
           "parent_error_record", "write_parent_error_file"]

_TAIL_LINES = 20
_TAIL_LINE_BYTES = 1 << 10
_TAIL_BYTES = 64 << 10


@dataclass(frozen=True)
class RankFailure:
    """The first rank that failed: who, how, and what it last wrote."""

    rank: int
    host: str
    exitcode: int
    message: str
    output_tail: tuple[str, ...]
    cause: RootCause | None = None
    error_file_ignored: str | None = None
    record: Mapping[str, object] | None = field(default=None, repr=False, compare=False)
    others: str = "; the other ranks were stopped"  # what became of the rest (`others_text`)
    # Its stderr reached the terminal as it came, under this prefix: the tail is not shown again (None: it did not).
    shown_under: str | None = None
    out_of_memory: str | None = None  # what says the kernel's OOM killer ended it (launcher/run/failure/oom_kill.py)

    @property
    def validation(self) -> bool:
        """True when the rank stopped because it refused the compile backend, or refused to start."""
        return self.exitcode == VALIDATION_STATUS and any(
            phrase in self.message for phrase in (REFUSAL_PHRASE, START_REFUSAL_PHRASE))

    @property
    def rendezvous(self) -> bool:
        """True when the rank's rendezvous failed (the direct path of several nodes: the ranks make it)."""
        return self.exitcode == FAILURE_STATUS and RENDEZVOUS_FAILURE_PHRASE in self.message

    def how(self) -> str:
        """`exit code 3` or `signal SIGKILL (9)`."""
        return ended_how(self.exitcode)

    def summary(self) -> str:
        """One paragraph: the validation or rendezvous line alone, or the rank, its status, the exception it recorded
        (torchrun's root cause) and its last lines of stderr."""
        if self.validation or self.rendezvous:
            return self.message
        how = self.how() if self.out_of_memory is None else f"{self.how()}: out of memory, {self.out_of_memory}"
        parts = [f"rank {self.rank} on {self.host} failed first, with {how}{self.others}"]
        if self.cause is not None:
            parts += ["  root cause (from its error file):", *(f"    {line}" for line in self.cause.lines())]
        if self.error_file_ignored is not None:
            parts.append(f"  its error file was ignored: {self.error_file_ignored}")
        if self.output_tail and self.shown_under is not None:
            parts.append(f"  its stderr is above{f', under {self.shown_under}' if self.shown_under else ''}")
        elif self.output_tail:
            parts += ["  last lines of its stderr:", *(f"    {line}" for line in self.output_tail)]
        return "\n".join(parts)


@functools.cache

def ended_how(exitcode: int) -> str:
    """A process's end in words: `exit code 3` or `signal SIGKILL (9)` (Popen's returncode)."""
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"signal {name} ({-exitcode})"
    return f"exit code {exitcode}"


def tail_lines(path: Path, count: int = _TAIL_LINES) -> tuple[str, ...]:
    """The last `count` lines of a rank's log file (each cut to 1 KiB), read from its end so that huge logs cost
    nothing; none when the rank left something else there (a FIFO, a folder, a link: never opened to block)."""
    try:
        data, _size = read_user_start(str(path), _TAIL_BYTES, follow_symlinks=False, offset=-_TAIL_BYTES)
    except UnsafeFileError:
        return ()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return tuple(clip(line, _TAIL_LINE_BYTES) for line in lines[-count:])


def others_text(failed_too: list[int], stopped: bool) -> str:
    """What became of the other ranks, after the first failure's clause: those that failed by themselves (before
    any was stopped), and whether any was stopped."""
    text = ""
    if failed_too:
        names = ", ".join(map(str, failed_too[:-1])) + (" and " if len(failed_too) > 1 else "") + str(failed_too[-1])
        text = f"; rank{'s' if len(failed_too) > 1 else ''} {names} failed too"
    return text + ("; the other ranks were stopped" if stopped else "")


def failure_from_engine(rank: int, exitcode: int, error_file: str | None, tail: tuple[str, ...]) -> RankFailure:
    """Build the account of the first failure torch elastic reports: its status, what the rank left in its
    error file (read here as untrusted input, never by the engine) and the last lines of its stderr."""
    recorded = read_error_file(error_file)
    cause = recorded.cause
    return RankFailure(rank=rank, host=this_host(), exitcode=exitcode,
                       message=cause.exception if cause is not None else "", output_tail=tail, cause=cause,
                       error_file_ignored=recorded.ignored_because, record=recorded.record)


# What a rank writes when it failed because a peer went away (gloo, NCCL, the c10d store).
_PEER_LOST = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|DistNetworkError|"
    r"NCCL communicator was aborted|recvValue?\b.*failed|failed to recv, got 0 bytes",
    re.IGNORECASE,
)

# gloo names the peer it lost: `Connection closed by peer [10.0.0.7]:12345`, `Read error [10.0.0.7]:12345`.
_PEER_ADDRESS = re.compile(r"\[([0-9A-Fa-f.:]+)\]:\d+")


def lost_a_peer(stderr_tail: tuple[str, ...]) -> bool:
    """True when a rank's last lines say it failed because a peer's connection went away."""
    return any(_PEER_LOST.search(line) for line in stderr_tail)


def lost_peer_note(stderr_tail: tuple[str, ...]) -> str | None:
    """For a cause that itself only lost a peer: one line naming the peer's address, when gloo said it."""
    if not lost_a_peer(stderr_tail):
        return None
    lost_lines = [line for line in stderr_tail if _PEER_LOST.search(line)]
    found = next((m.group(1) for line in lost_lines if (m := _PEER_ADDRESS.search(line))), None)
    where = f"its peer at {found}" if found else "a peer"
    return f"it lost {where} first: a rank or a node there went away (lost node, or a failure there)"


def first_failure(failures: Mapping[int, Any], exited: Mapping[int, float]) -> tuple[int, Any]:
    """(rank, failure) of the failure that started the teardown: the first to exit (a failure has the `pid`,
    `exitcode` and `timestamp` of torch's ProcessFailure).

    Failures are ordered by the exit times the launcher saw (`exited`: pid -> monotonic time) when it saw every
    failed rank's exit; else by their timestamps (whole seconds), a rank that ended by itself before one ended
    by a signal (as the teardown ends them) in the same second, then the lowest rank. What a rank wrote never
    decides it: its own "Connection reset by peer" may be its own failure (lost_peer_note says what it lost).
    """
    by_pid = {failure.pid: rank for rank, failure in failures.items()}
    if by_pid.keys() <= exited.keys():
        cause = min(failures, key=lambda r: exited[failures[r].pid])
    else:
        cause = min(failures, key=lambda r: (failures[r].timestamp, failures[r].exitcode < 0, r))
    return cause, failures[cause]


def hand_on_root_cause(path: str | None, status: int, message: str | None, failure: RankFailure | None) -> str | None:
    """Write what torchrun would to the launcher's own error file `path` (none: nothing to do); None, or why it
    could not be written."""
    record = parent_error_record(status, message, failure)
    if not path or record is None:
        return None
    try:
        write_parent_error_file(path, record)
    except OSError as exc:
        return f"{ERROR_FILE_VAR} {path!r} was not written: {exc.strerror or exc}"
    return None


def parent_error_record(status: int, message: str | None, failure: RankFailure | None) -> dict | None:
    """What torchrun would write for a job that ended with `status` (None: nothing to write)."""
    if status == 0:
        return None
    if failure is not None:
        return _with_error_code(failure.record, failure.exitcode) if failure.record is not None else None
    text = message or f"the job failed with exit status {status}"
    return {"message": {"message": text, "extraInfo": {"py_callstack": text, "timestamp": str(int(time.time()))}}}


def write_parent_error_file(path: str, record: Mapping[str, object]) -> None:
    """Replace the file at `path` with `record` as JSON (torch removes an existing one first, as here);
    raises OSError when it cannot be written."""
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "x", encoding="utf-8") as handle:
        json.dump(record, handle)


def _with_error_code(record: Mapping[str, object], exitcode: int) -> dict:
    """The rank's record with `message.errorCode` set to its exit code, as torch sets it (only in a record whose
    message is an object, and only for a non-zero code: a rank killed by a signal could not write its own)."""
    copy = dict(record)
    message = copy.get("message")
    if isinstance(message, Mapping) and exitcode:
        copy["message"] = {**message, "errorCode": exitcode}
    return copy
