"""The threads that copy the ranks' teed output to their log files and the terminal (terminal_lines.py), the
same on both launch paths: the direct path reads each rank's pipe; on the engine path the rank's stream is a
FIFO the engine opens in place of the log file (engine_tee.py), read as a pipe. A copy never stops draining
its pipe: a log file that cannot be written (a full disk, a file size limit) is left as it is, and one line
says the log is incomplete; a terminal that is gone is left alone.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from launcher.run.terminal_lines import RankLines, Terminal

__all__ = ["CHUNK", "OutputCopies"]

CHUNK = 64 * 1024
_QUIET_SECONDS = 0.1  # a stream silent this long shows its unfinished line


class OutputCopies:
    """Every copy of one attempt's ranks; `finish` waits for them to reach the end of their streams."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._finished = threading.Event()
        self._fifos: list[Path] = []

    def copy_pipe(self, pipe: IO[bytes], log: IO[bytes] | None, lines: RankLines, what: str,
                  notes: Terminal) -> None:
        """Copy `pipe` to `log` (as it is; closed at the end) and to `lines` until its end; `what` names the log
        in a note."""
        self._start(_drain_pipe, pipe, log, lines, what, notes, None)

    def copy_fifo(self, path: Path, log: IO[bytes], lines: RankLines, what: str, notes: Terminal) -> None:
        """Make a FIFO at `path` for a rank's stream and copy it as a pipe, until its end or, once `finish` is
        called, until it falls quiet (the engine keeps its own copy of the writing end open)."""
        os.mkfifo(path, 0o600)
        self._fifos.append(path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # at once: the engine's open for writing then never waits
        self._start(_drain_pipe, os.fdopen(fd, "rb", buffering=0), log, lines, what, notes, self._finished)

    def finish(self, seconds: float) -> None:
        """The ranks are gone: let each copy reach the end of its stream, waiting `seconds` at most in all."""
        self._finished.set()
        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        for path in self._fifos:
            path.unlink(missing_ok=True)

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="accel-output-copy")
        thread.start()
        self._threads.append(thread)


def _drain_pipe(pipe: IO[bytes], log: IO[bytes] | None, lines: RankLines, what: str, notes: Terminal,
                finished: threading.Event | None) -> None:
    """Copy until the pipe's end (or, with `finished`, until it is set and the pipe falls quiet); close both."""
    fd, poller, own_log = pipe.fileno(), select.poll(), log
    poller.register(fd, select.POLLIN)
    try:
        while True:
            bounded = lines.waiting or finished is not None
            if not poller.poll(_QUIET_SECONDS * 1000 if bounded else None):
                lines.quiet()
                if finished is not None and finished.is_set():
                    break
                continue
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                break
            if log is not None:
                try:
                    _write_all(log, chunk)
                except OSError as exc:
                    log = None
                    notes.note(f"{what} is incomplete: {exc.strerror or exc} (the output from here on is not in it)")
            lines.feed(chunk)
    finally:
        lines.close()
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
