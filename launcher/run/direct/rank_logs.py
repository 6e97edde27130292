"""Where each rank's output goes on the direct path, in torch elastic's layout and with its rules.

`LOG_ROOT/<run id>_XXXXXXXX/attempt_0/<local rank>/{stdout.log, stderr.log, error.json}`, as torch's
DefaultLogsSpecs makes it: a redirected stream goes to its file only; a teed one to its file and the
terminal, each line under its prefix (launcher/run/rank_output.py); any other is inherited. Streams the
user leaves alone are handled as on the engine path: stderr teed (kept for the failure summary), and
stdout teed too with --log-dir. A rank left out by --local-ranks-filter writes its files only.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import IO

from launcher.contract.job import JobConfig
from launcher.run.rank_output import prefix_template, rank_streams

__all__ = ["RankLogs", "RankStreams"]

_OUT, _ERR = 1, 2


@dataclass
class RankStreams:
    """One rank's stdout and stderr for Popen, its error file, and the copies to make while it runs."""

    local_rank: int
    folder: Path
    stdout: int | IO[bytes] | None = None
    stderr: int | IO[bytes] | None = None
    copies: list[threading.Thread] = field(default_factory=list)

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
        """Copy a rank's piped streams to their files and the terminal, line by line, each under its header."""
        streams = self.ranks[local_rank]
        engine = self._config.settings.engine
        header = Template(prefix_template()).safe_substitute(
            role_name=engine.role, rank=self._config.global_rank(local_rank), local_rank=local_rank)
        for pipe, name in ((process.stdout, "stdout"), (process.stderr, "stderr")):
            if pipe is None:
                continue
            log = self._open(streams.folder / f"{name}.log")
            thread = threading.Thread(target=_copy, args=(pipe, log, name, header), daemon=True,
                                      name=f"accel-{name}-{local_rank}")
            thread.start()
            streams.copies.append(thread)

    def finish(self, seconds: float) -> None:
        """Wait up to `seconds` for the copies to reach the end of their pipes, then close the files."""
        for streams in self.ranks:
            for thread in streams.copies:
                thread.join(timeout=seconds)
        for handle in self._opened:
            handle.close()


def _copy(pipe: IO[bytes], log: IO[bytes], name: str, header: str) -> None:
    """Every line of `pipe` to `log` as it is, and to this launcher's stdout or stderr under `header`."""
    with pipe:
        for line in iter(pipe.readline, b""):
            log.write(line)
            terminal = getattr(sys, name)  # read per line: the prefix writer is installed around the job
            try:
                terminal.write(header + line.decode("utf-8", errors="replace"))
                terminal.flush()
            except (OSError, ValueError):  # a terminal gone: the file keeps the output
                pass
