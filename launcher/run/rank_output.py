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

from launcher.contract.engine_options import parse_std
from launcher.contract.job import JobConfig

__all__ = ["MARKER_TEMPLATE", "RankLineWriter", "job_prefixes", "rank_prefixes", "prefix_template", "rank_streams"]

_OUT, _ERR = 1, 2

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


def rank_streams(config: JobConfig) -> list[tuple[int, int]]:
    """Each local rank's (redirected, teed) streams, 1 stdout and 2 stderr, on both launch paths: the user's
    --redirects / --tee, and every stream they leave alone as we always do: stderr teed (kept for the failure
    summary), stdout inherited, or teed too with --log-dir."""
    ours = _OUT | _ERR if config.settings.log_dir else _ERR
    streams = []
    for redirected, teed in zip(_asked(config, "--redirects"), _asked(config, "--tee")):
        streams.append((redirected, teed | (ours & ~(redirected | teed))))
    return streams


@contextmanager
def job_prefixes(config: JobConfig) -> Iterator[None]:
    """torchrun's prefixes on the terminal while the job runs, unless the user set a template of their own."""
    if prefix_template() != MARKER_TEMPLATE:
        yield
        return
    teed = _asked(config, "--tee")
    with rank_prefixes(config.node_range[1] * config.nproc_per_node > 1,
                       user_teed_out={rank for rank, streams in enumerate(teed) if streams & _OUT},
                       user_teed_err={rank for rank, streams in enumerate(teed) if streams & _ERR}):
        yield


def _asked(config: JobConfig, flag: str) -> list[int]:
    """`--redirects` or `--tee` (checked before the launch) for each local rank."""
    engine = config.settings.engine
    asked = parse_std(flag, engine.redirects if flag == "--redirects" else engine.tee)
    return [asked if isinstance(asked, int) else asked.get(rank, 0) for rank in range(config.nproc_per_node)]
