"""Where each rank's output goes on the direct path, in torch elastic's layout and with its rules.

`LOG_ROOT/<run id>_XXXXXXXX/attempt_0/<local rank>/{stdout.log, stderr.log, error.json}`, as torch's
DefaultLogsSpecs makes it: a redirected stream goes to its file only; a teed one to its file and the
terminal, each line under its prefix (launcher/run/rank_output.py), copied in chunks as it comes
(launcher/run/output_copy.py); any other is inherited. Streams the
user leaves alone are handled as on the engine path: stderr teed (kept for the failure summary), and
stdout teed too with --log-dir. A rank left out by --local-ranks-filter writes its files only.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from launcher.contract.job_config import JobConfig
from launcher.run.output_copy import OutputCopies
from launcher.run.rank_output import rank_prefix, rank_streams
from launcher.run.terminal_lines import RankLines, terminal

__all__ = ["RankLogs", "RankStreams"]

_OUT, _ERR = 1, 2


@dataclass
class RankStreams:
    """One rank's stdout and stderr for Popen, and its error file."""

    local_rank: int
    folder: Path
    stdout: int | IO[bytes] | None = None
    stderr: int | IO[bytes] | None = None

    @property
    def error_file(self) -> str:
        return str(self.folder / "error.json")

    @property
    def stderr_log(self) -> Path:
        return self.folder / "stderr.log"


class RankLogs:
    """The attempt's folders and every rank's streams; `start_copies` once the ranks run, `finish` after."""

    def __init__(self, config: JobConfig, log_root: Path, run_id: str) -> None:
        self._config = config
        self.run_id = run_id
        run_folder = Path(tempfile.mkdtemp(prefix=f"{run_id}_", dir=log_root))
        self._attempt = run_folder / "attempt_0"
        self._opened: list[IO[bytes]] = []
        self._copies = OutputCopies()
        self.ranks = [self._streams(local_rank, redirected, teed)
                      for local_rank, (redirected, teed) in enumerate(rank_streams(config))]

    def _streams(self, local_rank: int, redirected: int, teed: int) -> RankStreams:
        engine = self._config.settings.engine
        folder = self._attempt / str(local_rank)
        folder.mkdir(parents=True)
        shown = not engine.local_ranks_filter or local_rank in engine.local_ranks_filter
        streams = RankStreams(local_rank, folder)
        for bit, name in ((_OUT, "stdout"), (_ERR, "stderr")):
            path = folder / f"{name}.log"
            if teed & bit and shown:
                setattr(streams, name, subprocess.PIPE)
            elif (redirected | teed) & bit:
                setattr(streams, name, self._open(path))
            elif not shown:
                setattr(streams, name, subprocess.DEVNULL)
        return streams

    def _open(self, path: Path) -> IO[bytes]:
        handle = path.open("ab", buffering=0)
        self._opened.append(handle)
        return handle

    def start_copies(self, local_rank: int, process: subprocess.Popen) -> None:
        """Copy a rank's piped streams to their files and the terminal, each line under its prefix."""
        folder = self.ranks[local_rank].folder
        for pipe, name, fd in ((process.stdout, "stdout", 1), (process.stderr, "stderr", 2)):
            if pipe is None:
                continue
            log = self._open(folder / f"{name}.log")
            lines = RankLines(terminal(fd), rank_prefix(self._config, local_rank, fd))
            what = f"rank {self._config.global_rank(local_rank)}'s log {log.name}"
            self._copies.copy_pipe(pipe, log, lines, what, terminal(2))

    def finish(self, seconds: float) -> None:
        """Wait up to `seconds` for the copies to reach the end of their pipes, then close the files."""
        self._copies.finish(seconds)
        for handle in self._opened:
            handle.close()
