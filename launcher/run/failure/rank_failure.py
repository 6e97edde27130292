"""A short account of the first failed rank, instead of the engine's long table (docs/CONTRACT.md section 4)."""

from __future__ import annotations

import functools
import signal
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from launcher.contract.names import (FAILURE_STATUS, REFUSAL_PHRASE, RENDEZVOUS_FAILURE_PHRASE, SIGNAL_STATUS_BASE,
                                     START_REFUSAL_PHRASE, VALIDATION_STATUS)
from launcher.run.failure.root_cause import RootCause, clip, read_error_file

__all__ = ["RankFailure", "this_host", "ended_how", "exit_status", "tail_lines", "others_text",
           "failure_from_engine"]

_TAIL_LINES = 20
_TAIL_LINE_BYTES = 1 << 10


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
def this_host() -> str:
    """This host as torchrun's failure table and MASTER_ADDR name it (`socket.getfqdn()`), in every failure line."""
    return socket.getfqdn()


def ended_how(exitcode: int) -> str:
    """A process's end in words: `exit code 3` or `signal SIGKILL (9)` (Popen's returncode)."""
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"signal {name} ({-exitcode})"
    return f"exit code {exitcode}"


def exit_status(exitcode: int) -> int:
    """A process's status as a shell shows it: 128+N for a signal N (Python gives it as -N)."""
    return SIGNAL_STATUS_BASE - exitcode if exitcode < 0 else exitcode


def tail_lines(path: Path, count: int = _TAIL_LINES) -> tuple[str, ...]:
    """The last `count` lines of a log file (each cut to 1 KiB), read from its end so that huge logs cost nothing."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
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
