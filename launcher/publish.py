"""Publishing a file that other processes read: whole or not at all, through a temporary file beside it
(mode 0600), then a rename.

A reader never sees a half-written file, and a writer stopped part-way leaves the old file or none.
Nothing is ever created through a symbolic link: the temporary file is made with O_CREAT|O_EXCL (and
O_NOFOLLOW) by `mkstemp`, and the rename replaces a link at `path` itself, never its target. Used by the
facts cache (readers are other processes of the node) and by a rank's refusal (the launcher reads the
error file of the first rank that failed).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["publish_file"]


def publish_file(path: str | Path, text: str | bytes) -> None:
    """Put `text` (or bytes) at `path` through a temporary file in the same folder (mode 0600); OSError when it
    cannot."""
    import tempfile  # not at import: every rank imports this module, few ever write

    folder, name = os.path.split(os.fspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
