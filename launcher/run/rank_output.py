"""Rank output on the launcher's terminal with torchrun's prefixes: one `[rankN]:` per line of a
multi-rank job, never doubled when torch already wrote `[rankN]:` itself, none for a one-rank job.

torch elastic prefixes every teed line with a fixed header; we give it a marker as the header and
turn the marker into the prefix (or nothing) as each line is written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["MARKER_TEMPLATE", "RankLineWriter", "rank_prefixes", "prefix_template"]

_MARKER = "\x00accel-rank:"
MARKER_TEMPLATE = _MARKER + "${rank}\x00"
# torchrun's own way to ask for a prefix; when it is set it is used as it is, as torchrun does.
TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


def prefix_template() -> str:
    """The engine's log_line_prefix_template: the user's (torchrun's variable), else our marker."""
    return os.environ.get(TEMPLATE_ENV) or MARKER_TEMPLATE


class RankLineWriter:
    """A text stream that writes marked lines with `[rankN]:` (or bare) and everything else unchanged."""

    def __init__(self, stream: TextIO, prefix_ranks: bool) -> None:
        self._stream, self._prefix_ranks = stream, prefix_ranks

    def write(self, text: str) -> int:
        """Write one marked line (as the engine's tail threads do) or any other text."""
        if text.startswith(_MARKER):
            rank, _, line = text[len(_MARKER):].partition("\x00")
            prefix = f"[rank{rank}]:"
            if self._prefix_ranks and not line.startswith(prefix):
                line = prefix + line
            self._stream.write(line)
        else:
            self._stream.write(text)
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextmanager
def rank_prefixes(prefix_ranks: bool) -> Iterator[None]:
    """Route the engine's teed rank output through RankLineWriter while the job runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RankLineWriter(sys.stdout, prefix_ranks), RankLineWriter(sys.stderr, prefix_ranks)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
