"""Rank output on the launcher's terminal with torchrun's prefixes, on both launch paths.

A stream the user teed (`--tee`) is shown as torchrun shows it: every line under torch elastic's own
header, `[{role}{local_rank}]:` (`[default0]:`). The stderr we tee ourselves (kept for the failure summary)
gets one `[rankN]:` per line of a multi-rank job, never doubled when torch already wrote `[rankN]:`
itself, and none for a one-rank job. The stdout we tee for --log-dir is shown bare, as without the flag. A template in torchrun's variable is used as it is, as torchrun does.
The copies themselves: launcher/run/output_copy.py and terminal_lines.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from string import Template

from launcher.contract.engine_options import parse_std
from launcher.contract.job_config import JobConfig

__all__ = ["TEMPLATE_ENV", "rank_prefix", "rank_streams"]

_OUT, _ERR = 1, 2

# torchrun's own way to ask for a prefix; when it is set it is used as it is, as torchrun does.
TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


def rank_prefix(config: JobConfig, local_rank: int, stream: int, environ: Mapping[str, str] = os.environ) -> bytes:
    """The prefix of every line of local rank `local_rank`'s stream (1 stdout, 2 stderr) on the terminal."""
    engine = config.settings.engine
    rank = config.global_rank(local_rank)
    teed = _asked(config, "--tee")[local_rank] & stream
    if stream == _OUT and not teed:  # the copy --log-dir keeps: the terminal shows what it shows without it
        text = ""
    elif environ.get(TEMPLATE_ENV):
        text = Template(environ[TEMPLATE_ENV]).safe_substitute(role_name=engine.role, rank=rank,
                                                                local_rank=local_rank)
    elif teed:
        text = f"[{engine.role}{local_rank}]:"
    elif config.node_range[1] * config.nproc_per_node > 1:
        text = f"[rank{rank}]:"
    else:
        text = ""
    return text.encode("utf-8", "replace")


def rank_streams(config: JobConfig) -> list[tuple[int, int]]:
    """Each local rank's (redirected, teed) streams, 1 stdout and 2 stderr, on both launch paths: the user's
    --redirects / --tee, and every stream they leave alone as we always do: stderr teed (kept for the failure
    summary), stdout inherited, or teed too with --log-dir."""
    ours = _OUT | _ERR if config.settings.log_dir else _ERR
    streams = []
    for redirected, teed in zip(_asked(config, "--redirects"), _asked(config, "--tee")):
        streams.append((redirected, teed | (ours & ~(redirected | teed))))
    return streams


def _asked(config: JobConfig, flag: str) -> list[int]:
    """`--redirects` or `--tee` (checked before the launch) for each local rank."""
    engine = config.settings.engine
    asked = parse_std(flag, engine.redirects if flag == "--redirects" else engine.tee)
    return [asked if isinstance(asked, int) else asked.get(rank, 0) for rank in range(config.nproc_per_node)]
