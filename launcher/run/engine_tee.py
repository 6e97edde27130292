"""The engine path's teed streams, shown by the launcher as on the direct path, not by torch elastic's tail.

torch elastic tees a stream by having the rank write its log file and tailing that file line by line
(`TailLog`): a line without end is held whole in memory, and a `\\r` progress bar becomes one line per
redraw. Here the engine still makes every file, but is told to tee nothing; the launcher tails the files
of the streams it would have teed, in chunks (launcher/run/output_copy.py), under the same prefixes as on
the direct path. With --duplicate-*-filters the engine keeps its own tee, which those filters read.
"""

from __future__ import annotations

import dataclasses

from torch.distributed.elastic.multiprocessing.api import LogsDest

from launcher.contract.job import JobConfig
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
        for fd, teed in ((1, destinations.tee_stdouts), (2, destinations.tee_stderrs)):
            for local_rank, path in teed.items():
                lines = RankLines(terminal(fd), rank_prefix(self._config, local_rank, fd))
                self._copies.tail_file(path, lines)
        return dataclasses.replace(destinations, tee_stdouts={}, tee_stderrs={})

    def finish(self, seconds: float) -> None:
        """The ranks are gone: copy what is left of their files, waiting `seconds` at most."""
        if self._copies is not None:
            self._copies.finish(seconds)
            self._copies = None
