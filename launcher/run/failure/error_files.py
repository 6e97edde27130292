"""The ranks' error files, kept from torch elastic's engine and read by the launcher alone.

The engine reads the error file of every rank that failed inside its monitor loop (`json.load`, then
indexing, on whatever the rank left there), so a rank that wrote text, a list or deep nesting there
turned into an exception inside the engine, and the rank's own status was lost. Each rank still gets
its `TORCHELASTIC_ERROR_FILE`; the engine is told `/dev/null` instead, which it takes as "no error file",
as it does for a rank killed by a signal; the launcher reads the first failed rank's file itself
(`launcher.run.failure.root_cause.read_error_file`). A layout of torch's `torchrun.logs_specs` entry points
(`--logs-specs NAME`) is kept the same way: its class, loaded by torchrun's loader, under `KeepsErrorFiles`.
"""

from __future__ import annotations

import dataclasses
import os

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, LogsSpecs
from torch.distributed.elastic.multiprocessing.api import LogsDest

from launcher.contract.engine_options import DEFAULT_LOGS_SPECS

__all__ = ["RankErrorFiles", "rank_error_files"]


class KeepsErrorFiles:
    """Put before a LogsSpecs class: its layout, with each rank's error file known to the launcher and hidden
    from the engine, and each rank's stderr file known (a plugin's layout is its own)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.error_files: dict[int, str] = {}
        self.stderrs: dict[int, str] = {}

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """The engine's destinations for one attempt: the ranks' error files are remembered, not handed on."""
        destinations = super().reify(envs)  # type: ignore[misc]
        self.error_files = dict(destinations.error_files)
        self.stderrs = {rank: path for rank, path in destinations.stderrs.items() if path}
        return dataclasses.replace(destinations, error_files=dict.fromkeys(destinations.error_files, os.devnull))

    def error_file(self, local_rank: int) -> str | None:
        """The error file the latest attempt's rank `local_rank` was given (None before any attempt)."""
        return self.error_files.get(local_rank)


class RankErrorFiles(KeepsErrorFiles, DefaultLogsSpecs):
    """torch's default log layout, keeping the ranks' error files."""


def rank_error_files(name: str) -> type[KeepsErrorFiles]:
    """The log layout `--logs-specs NAME` names, loaded by torchrun's own loader from torch's
    `torchrun.logs_specs` entry points, keeping the ranks' error files."""
    if name == DEFAULT_LOGS_SPECS:
        return RankErrorFiles
    from torch.distributed.run import _get_logs_specs_class

    layout: type[LogsSpecs] = _get_logs_specs_class(name)
    return type(f"{layout.__name__}KeepingErrorFiles", (KeepsErrorFiles, layout), {})
