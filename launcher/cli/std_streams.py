"""The launcher's own stdout and stderr: closed or broken, they are never a reason for a job to fail.

A closed descriptor 0, 1 or 2 is reopened on /dev/null (so no file the launcher opens later takes its
number and reaches the ranks as their stdout), and writes that fail (EPIPE, EBADF, ENOSPC) are dropped.
A write that failed for another reason than a reader gone away (a full disk, an I/O error) is kept, so
that a dry run's plan or the report, whose output is the point, can say it was lost (`lost_output`).
"""

from __future__ import annotations

import errno
import io
import logging
import os
import sys

__all__ = ["guard_std_streams", "lost_output"]

# A reader that went away (a closed pipe, `| head`): nothing was lost that anyone still wanted.
_READER_GONE = (errno.EPIPE, errno.EBADF)


class _Forgiving(io.TextIOBase):
    """A text stream that passes writes on and drops them when the other end is gone."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self._stream = stream
        self.lost: OSError | None = None

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:
        return getattr(self._stream, "errors", None)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._note(exc)
            return len(text)
        except ValueError:
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._note(exc)
        except ValueError:
            pass

    def _note(self, exc: OSError) -> None:
        if exc.errno not in _READER_GONE and self.lost is None:
            self.lost = exc

    @property
    def buffer(self) -> _ForgivingBytes:
        """The binary stream below, as forgiving (click writes bytes there: shell completion, `echo(bytes)`);
        AttributeError where the stream has none, as for a stream without one."""
        return _ForgivingBytes(self._stream.buffer, self)

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def writable(self) -> bool:
        return True


class _ForgivingBytes(io.BufferedIOBase):
    """The binary side of a `_Forgiving` stream: what fails is noted on the text side and dropped."""

    def __init__(self, stream: io.BufferedIOBase, text: _Forgiving) -> None:
        self._stream, self._text = stream, text

    def write(self, data: bytes) -> int:  # type: ignore[override]
        try:
            return self._stream.write(data)
        except OSError as exc:
            self._text._note(exc)
        except ValueError:
            pass
        return len(data)

    def flush(self) -> None:
        self._text.flush()
        try:
            self._stream.flush()
        except OSError as exc:
            self._text._note(exc)
        except ValueError:
            pass

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True


def guard_std_streams() -> None:
    """Reopen closed standard descriptors on /dev/null and make sys.stdout / sys.stderr forgiving."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name) or open(fd, "w", encoding="utf-8", closefd=False)
        setattr(sys, name, _Forgiving(stream))
    logging.raiseExceptions = False


def lost_output() -> str | None:
    """Why what was written to stdout did not all arrive (`No space left on device`), or None: flushes
    stdout first. A reader that went away (a broken pipe) is not a loss."""
    stream = sys.stdout
    try:
        stream.flush()
    except OSError as exc:
        if exc.errno not in _READER_GONE:
            return exc.strerror or str(exc)
    except (ValueError, AttributeError):
        return None
    lost = getattr(stream, "lost", None)
    return (lost.strerror or str(lost)) if isinstance(lost, OSError) else None
