"""torch elastic's default log layout, made without torch (the direct path's; the engine path's is torch's own
`DefaultLogsSpecs`, which gives the same folders and files).

`LOG_ROOT/<run id>_XXXXXXXX/attempt_0/<local rank>/{stdout.log, stderr.log, error.json}`: a redirected stream
goes to its file only; a teed one to its file and the terminal; any other is the terminal's. Streams the user
leaves alone are handled as on the engine path (launcher/run/rank_output.py: rank_streams). A rank left out
by --local-ranks-filter writes its files only, and nothing of it reaches the terminal.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.run.rank_output import rank_streams

__all__ = ["LogLayout", "default_layout"]


@dataclass
class LogLayout:
    """Each rank's destinations, by local rank, with the field names of torch's `LogsDest` ("": the terminal)."""

    stdouts: dict[int, str] = field(default_factory=dict)
    stderrs: dict[int, str] = field(default_factory=dict)
    tee_stdouts: dict[int, str] = field(default_factory=dict)
    tee_stderrs: dict[int, str] = field(default_factory=dict)
    error_files: dict[int, str] = field(default_factory=dict)
    filtered_stdout: str = ""
    filtered_stderr: str = ""


def default_layout(config: JobConfig, log_root: Path, run_id: str) -> LogLayout:
    """The folders of one attempt under `log_root`, made now, and each rank's files in them."""
    attempt = Path(tempfile.mkdtemp(prefix=f"{run_id}_", dir=log_root)) / "attempt_0"
    shown = set(config.settings.engine.local_ranks_filter) or None
    layout = LogLayout(filtered_stdout=str(attempt / "filtered_stdout.log"),
                       filtered_stderr=str(attempt / "filtered_stderr.log"))
    for local_rank, (redirected, teed) in enumerate(rank_streams(config)):
        folder = attempt / str(local_rank)
        folder.mkdir(parents=True)
        for bit, files, tees in ((1, layout.stdouts, layout.tee_stdouts), (2, layout.stderrs, layout.tee_stderrs)):
            files[local_rank] = str(folder / f"{'stdout' if bit == 1 else 'stderr'}.log") if (redirected | teed) & bit \
                else ""
            if teed & bit and (shown is None or local_rank in shown):
                tees[local_rank] = files[local_rank]
            elif not files[local_rank] and shown is not None and local_rank not in shown:
                files[local_rank] = os.devnull
        layout.error_files[local_rank] = str(folder / "error.json")
    return layout
