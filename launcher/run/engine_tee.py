"""The engine path's teed streams, copied by the launcher as on the direct path, not by torch elastic's tail.

torch elastic tees a stream by having the rank write its log file and tailing that file line by line
(`TailLog`): a line without end is held whole in memory, a `\\r` progress bar becomes one line per redraw,
and a log the rank cannot write (a full disk) fails the rank's own write. Here the engine is told to tee
nothing, and each stream it would have teed is a FIFO in place of its log file: the launcher reads it as it
reads a direct rank's pipe, and writes the log itself (launcher/run/output_copy.py), under the same
prefixes. With --duplicate-*-filters the engine keeps its own tee, which those filters read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from torch.distributed.elastic.multiprocessing.api import LogsDest

from launcher.contract.job_config import JobConfig
from launcher.run.failure.error_files import RankErrorFiles
from launcher.run.output_copy import OutputCopies
from launcher.run.rank_output import rank_prefix
from launcher.run.terminal_lines import RankLines, terminal

__all__ = ["LauncherTee"]


class LauncherTee(RankErrorFiles):
    """torch's log layout, with each rank's error file kept from the engine and its teed streams shown by us."""

    def __init__(self, config: JobConfig, engine_tees: bool, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._config, self._engine_tees = config, engine_tees
        self._copies: OutputCopies | None = None

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """One attempt's destinations (the previous attempt's ranks are gone by now: its copies end here)."""
        destinations = super().reify(envs)
        if self._engine_tees:
            return destinations
        self.finish(0)
        self._copies = OutputCopies()
        files = {1: dict(destinations.stdouts), 2: dict(destinations.stderrs)}
        for fd, teed in ((1, destinations.tee_stdouts), (2, destinations.tee_stderrs)):
            for local_rank, path in teed.items():
                log = Path(path).open("ab", buffering=0)  # the copy closes it at the stream's end
                files[fd][local_rank] = f"{path}.fifo"
                lines = RankLines(terminal(fd), rank_prefix(self._config, local_rank, fd))
                what = f"rank {self._config.global_rank(local_rank)}'s log {path}"
                self._copies.copy_fifo(Path(files[fd][local_rank]), log, lines, what, terminal(2))
        return dataclasses.replace(destinations, stdouts=files[1], stderrs=files[2], tee_stdouts={}, tee_stderrs={})

    def finish(self, seconds: float) -> None:
        """The ranks are gone: copy what is left of their streams, waiting `seconds` at most."""
        if self._copies is not None:
            self._copies.finish(seconds)
            self._copies = None
