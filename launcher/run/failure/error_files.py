"""The ranks' error files, kept from torch elastic's engine and read by the launcher alone.

The engine reads the error file of every rank that failed inside its monitor loop (`json.load`, then
indexing, on whatever the rank left there), so a rank that wrote text, a list or deep nesting there
turned into an exception inside the engine, and the rank's own status was lost. Each rank still gets
its `TORCHELASTIC_ERROR_FILE`; the engine is told `/dev/null` instead, which it takes as "no error file",
as it does for a rank killed by a signal; the launcher reads the first failed rank's file itself
(`launcher.run.failure.root_cause.read_error_file`).
"""

from __future__ import annotations

import dataclasses
import os

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
from torch.distributed.elastic.multiprocessing.api import LogsDest

__all__ = ["RankErrorFiles"]


class RankErrorFiles(DefaultLogsSpecs):
    """torch's log layout, with each rank's error file known to the launcher and hidden from the engine."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.error_files: dict[int, str] = {}

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """The engine's destinations for one attempt: the ranks' error files are remembered, not handed on."""
        destinations = super().reify(envs)
        self.error_files = dict(destinations.error_files)
        return dataclasses.replace(destinations, error_files=dict.fromkeys(destinations.error_files, os.devnull))

    def error_file(self, local_rank: int) -> str | None:
        """The error file the latest attempt's rank `local_rank` was given (None before any attempt)."""
        return self.error_files.get(local_rank)
