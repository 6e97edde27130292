"""Rank output on the launcher's terminal, live and in bounded memory, on both launch paths.

Each rank's stream is read in chunks (never whole lines: a line without end costs no more than a chunk)
and cut at every `\\n` and `\\r`. Complete lines go out at once under the rank's prefix; the unfinished end
of a line is kept, at most `PENDING_BOUND` bytes, and goes out when it grows past that, when the stream
falls quiet, or at once after a `\\r`: a progress bar (tqdm writes `\\r` and the bar) is redrawn in place
as it is at a terminal of its own. Two ranks never share a line: a line left open by one is ended before
another rank's output. The terminal is written with os.write; when it is gone (a closed pipe, a full disk)
the copies go on draining the ranks' streams, and the terminal is left alone.

Each rank's prefix is its node plan's (`line_prefix` in rank_logs.py). The copies themselves:
launcher/run/group/output_copy.py.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable

__all__ = ["PENDING_BOUND", "RankLines", "Terminal", "terminal"]

PENDING_BOUND = 64 * 1024
# A line of the launcher's own that a rank prints (a note) starts its line, as the launcher's do.
_OWN = b"accel-launch: "
_ENDS = re.compile(rb"(\r|\n)")
_terminals: dict[int, Terminal] = {}


class Terminal:
    """One of the launcher's outputs (its stdout or stderr), shared by every rank's copy; lines stay whole."""

    def __init__(self, write: Callable[[bytes], object]) -> None:
        self._write, self._lock = write, threading.Lock()
        self._open: object | None = None  # the source whose line is unfinished on the terminal
        self._at_start = False  # ... with the cursor back at its start (after a \r)
        self._ended: object | None = None  # the source whose unfinished line we ended for another's output
        self.gone = False

    def put(self, source: object, prefix: bytes, data: bytes) -> None:
        """Write `data` of `source`: every line (after a \\n or a \\r) begins with `prefix`, unless it holds it or
        is a line of the launcher's own."""
        with self._lock:
            out = bytearray()
            if self._open is not None and self._open is not source:
                out += b"\n"
                self._open, self._ended = None, self._open
            ended = self._ended is source
            if ended:
                self._ended = None
            for piece in _ENDS.split(data):
                if piece == b"\n" and ended:  # that line was ended already, for another rank's output
                    ended = False
                elif piece == b"\n":
                    out += b"\n" if self._open is not None else prefix + b"\n"
                    self._open = None
                elif piece == b"\r":
                    if self._open is not None:
                        out += b"\r"
                        self._at_start = True
                elif piece:
                    ended = False
                    if (self._open is None or self._at_start) and not piece.startswith((prefix, _OWN)):
                        out += prefix
                    out += piece
                    self._open, self._at_start = source, False
            self._send(bytes(out))

    def end_line(self, source: object) -> None:
        """End `source`'s line if it is the one left unfinished (its stream ended without a newline)."""
        with self._lock:
            if self._open is source:
                self._open = None
                self._send(b"\n")

    def note(self, line: str) -> None:
        """One line of the launcher's own, on a line of its own."""
        with self._lock:
            start = b"\n" if self._open is not None else b""
            self._open = None
            self._send(start + f"accel-launch: {line}\n".encode("utf-8", "replace"))

    def _send(self, data: bytes) -> None:
        if self.gone or not data:
            return
        try:
            self._write(data)
        except (OSError, ValueError):  # the terminal is gone: the ranks' streams are still drained
            self.gone = True


class RankLines:
    """One rank's stream on a Terminal under its prefix; `feed` each chunk read, `quiet` when none comes for a
    while, `close` at the end of the stream."""

    def __init__(self, terminal: Terminal, prefix: bytes, bound: int = PENDING_BOUND) -> None:
        self._terminal, self._prefix, self._bound = terminal, prefix, bound
        self._pending = b""
        self._after_return = False  # the last line end was a \r: what follows is a progress bar's redraw

    def feed(self, chunk: bytes) -> None:
        """Write what `chunk` completes, and what must be seen now; keep the rest (at most `bound` bytes)."""
        data = self._pending + chunk
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if last >= 0:
            self._terminal.put(self, self._prefix, data[:last + 1])
            self._after_return = data[last:last + 1] == b"\r"
            data = data[last + 1:]
        self._pending = data
        if len(data) > self._bound or (data and self._after_return):
            self.quiet()

    @property
    def waiting(self) -> bool:
        """Whether an unfinished line waits to be shown."""
        return bool(self._pending)

    def quiet(self) -> None:
        """The stream fell quiet: show the unfinished line as it stands (a prompt, a bar)."""
        if self._pending:
            self._terminal.put(self, self._prefix, self._pending)
            self._pending = b""

    def close(self) -> None:
        """The stream ended: show what is left, and end its line."""
        self.quiet()
        self._terminal.end_line(self)


def terminal(fd: int) -> Terminal:
    """The launcher's stdout (1) or stderr (2) as a Terminal, one for the whole process."""
    if fd not in _terminals:
        (sys.stdout if fd == 1 else sys.stderr).flush()
        _terminals[fd] = Terminal(lambda data: _write_all(fd, data))
    return _terminals[fd]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
