"""Rank output on the launcher's terminal with torchrun's prefixes.

A stream the user teed (`--tee`) is shown as torchrun shows it: every line under torch elastic's own
header, `[{role}{local_rank}]:` (`[default0]:`). The stderr we tee ourselves (kept for the failure summary)
gets one `[rankN]:` per line of a multi-rank job, never doubled when torch already wrote `[rankN]:`
itself, and none for a one-rank job. torch elastic prefixes every teed line with a fixed header; we give
it a marker as the header and turn the marker into the prefix (or nothing) as each line is written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["MARKER_TEMPLATE", "RankLineWriter", "rank_prefixes", "prefix_template"]

_MARKER = "\x00accel-rank:"
MARKER_TEMPLATE = _MARKER + "${rank}\x00${local_rank}\x00${role_name}\x00"
# torchrun's own way to ask for a prefix; when it is set it is used as it is, as torchrun does.
TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


def prefix_template() -> str:
    """The engine's log_line_prefix_template: the user's (torchrun's variable), else our marker."""
    return os.environ.get(TEMPLATE_ENV) or MARKER_TEMPLATE


class RankLineWriter:
    """A text stream that writes marked lines with their prefix (or bare) and everything else unchanged."""

    def __init__(self, stream: TextIO, prefix_ranks: bool, user_teed: Collection[int] = ()) -> None:
        self._stream, self._prefix_ranks, self._user_teed = stream, prefix_ranks, frozenset(user_teed)

    def write(self, text: str) -> int:
        """Write one marked line (as the engine's tail threads do) or any other text."""
        if text.startswith(_MARKER):
            rank, local_rank, role, line = text[len(_MARKER):].split("\x00", 3)
            if local_rank.isdigit() and int(local_rank) in self._user_teed:
                line = f"[{role}{local_rank}]:{line}"
            elif self._prefix_ranks and not line.startswith(prefix := f"[rank{rank}]:"):
                line = prefix + line
            self._stream.write(line)
        else:
            self._stream.write(text)
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextmanager
def rank_prefixes(prefix_ranks: bool, user_teed_out: Collection[int] = (),
                  user_teed_err: Collection[int] = ()) -> Iterator[None]:
    """Route the engine's teed rank output through RankLineWriter while the job runs; `user_teed_*` are the
    local ranks whose stdout / stderr the user asked to tee."""
    saved = sys.stdout, sys.stderr
    sys.stdout = RankLineWriter(sys.stdout, prefix_ranks, user_teed_out)
    sys.stderr = RankLineWriter(sys.stderr, prefix_ranks, user_teed_err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
