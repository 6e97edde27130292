"""The threads that copy the ranks' teed output from their pipes to their log files and the terminal
(terminal_lines.py), the same on both launch paths (launcher/run/group/rank_logs.py). A copy never stops draining
its pipe: a log file that cannot be written (a full disk, a file size limit) is left as it is, and one line
says the log is incomplete; a terminal that is gone is left alone.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from collections.abc import Sequence
from typing import IO, Protocol

from launcher.run.group.terminal_lines import Terminal
from launcher.signal_rules import start_thread

__all__ = ["CHUNK", "Lines", "OutputCopies"]

CHUNK = 64 * 1024
_QUIET_SECONDS = 0.1  # a stream silent this long shows its unfinished line


class Lines(Protocol):
    """Where a copy hands each chunk: the terminal's RankLines, or a filtered file's lines."""

    waiting: bool

    def feed(self, chunk: bytes) -> None: ...

    def quiet(self) -> None: ...

    def close(self) -> None: ...


class OutputCopies:
    """Every copy of one attempt's ranks; `finish` waits for them to reach the end of their streams."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def copy_pipe(self, pipe: IO[bytes], log: IO[bytes] | None, lines: Sequence[Lines], what: str,
                  notes: Terminal) -> None:
        """Copy `pipe` to `log` (as it is; closed at the end) and to each of `lines` until its end; `what` names
        the log in a note."""
        thread = threading.Thread(target=_drain_pipe, args=(pipe, log, lines, what, notes), daemon=True,
                                  name="accel-output-copy")
        start_thread(thread)
        self._threads.append(thread)

    def finish(self, seconds: float) -> None:
        """The ranks are gone: let each copy reach the end of its stream, waiting `seconds` at most in all."""
        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


def _drain_pipe(pipe: IO[bytes], log: IO[bytes] | None, lines: Sequence[Lines], what: str, notes: Terminal) -> None:
    """Copy until the pipe's end; close both."""
    fd, poller, own_log = pipe.fileno(), select.poll(), log
    poller.register(fd, select.POLLIN)
    try:
        while True:
            if not poller.poll(_QUIET_SECONDS * 1000 if any(each.waiting for each in lines) else None):
                for each in lines:
                    each.quiet()
                continue
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            if log is not None:
                try:
                    _write_all(log, chunk)
                except OSError as exc:
                    log = None
                    notes.note(f"{what} is incomplete: {exc.strerror or exc} (the output from here on is not in it)")
            for each in lines:
                each.feed(chunk)
    finally:
        for each in lines:
            each.close()
        pipe.close()
        if own_log is not None:
            own_log.close()


def _write_all(log: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = log.write(view)
        if not written:
            raise OSError(errno.EIO, "the file took no more bytes")
        view = view[written:]
