"""The threads that copy the ranks' teed output to the terminal (terminal_lines.py), on both launch paths.

The direct path reads each rank's pipe and writes its log file too; the engine path tails the log file the
rank writes itself (as torch elastic's tee does, but in chunks, not lines). A copy never stops draining its
pipe: a log file that cannot be written (a full disk, a file size limit) is left as it is, and one line
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

    def copy_pipe(self, pipe: IO[bytes], log: IO[bytes] | None, lines: RankLines, what: str,
                  notes: Terminal) -> None:
        """Copy `pipe` to `log` (as it is) and to `lines` until its end; `what` names the log in a note."""
        self._start(_drain_pipe, pipe, log, lines, what, notes)

    def tail_file(self, path: str, lines: RankLines) -> None:
        """Copy what a rank writes to `path` to `lines`, until `finish` and the file's end."""
        self._start(_tail, Path(path), lines, self._finished)

    def finish(self, seconds: float) -> None:
        """The ranks are gone: let each copy reach the end of its stream, waiting `seconds` at most in all."""
        self._finished.set()
        deadline = time.monotonic() + seconds
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="accel-output-copy")
        thread.start()
        self._threads.append(thread)


def _drain_pipe(pipe: IO[bytes], log: IO[bytes] | None, lines: RankLines, what: str, notes: Terminal) -> None:
    fd, poller = pipe.fileno(), select.poll()
    poller.register(fd, select.POLLIN)
    try:
        while True:
            if not poller.poll(_QUIET_SECONDS * 1000 if lines.waiting else None):
                lines.quiet()
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
            lines.feed(chunk)
    finally:
        lines.close()
        pipe.close()


def _tail(path: Path, lines: RankLines, finished: threading.Event) -> None:
    while True:
        ended = finished.is_set()  # set once the ranks are gone: a file missing then never comes
        if path.exists():
            break
        if ended:
            return
        finished.wait(_QUIET_SECONDS)
    try:
        with path.open("rb", buffering=0) as log:
            while True:
                ended = finished.is_set()  # read once more after the ranks are gone: to the file's end
                chunk = log.read(CHUNK)
                if chunk:
                    lines.feed(chunk)
                    continue
                if ended:
                    break
                lines.quiet()
                time.sleep(_QUIET_SECONDS)
    except OSError:
        pass
    finally:
        lines.close()


def _write_all(log: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = log.write(view)
        if not written:
            raise OSError(errno.EIO, "the file took no more bytes")
        view = view[written:]
