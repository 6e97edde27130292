"""One node's job from its start to nothing left, the same on both launch paths (engine/engine_run.py: torch's engine;
direct_run.py: the launcher's own loop).

The launcher becomes the subreaper of its ranks, makes the private folder for their logs, reaps what the
ranks leave behind as it ends while the job runs (reaper.py), and starts the keeper that ends the job within the
grace window should the launcher die, and another should the keeper die (job_keeper.py). Each attempt's ranks end
through `RankGroup.end` (stopped, what they left swept, their output drained); when the job is over, whatever is still
left is swept and the folder removed (kept under --log-dir), however the job ended.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from launcher.contract.job_config import RunSettings
from launcher.run.scope.job_keeper import keeper
from launcher.run.scope.job_signals import StopState
from launcher.run.scope.leftovers import log_folder, make_private_folder
from launcher.run.scope.reaper import become_subreaper, reaping_adopted, sweep_descendants

__all__ = ["JobFolders", "job_scope"]


@dataclass(frozen=True)
class JobFolders:
    """Where the ranks' logs go (--log-dir, else `private`), and the launcher's private (0700) folder for what
    the ranks hand it (their stack dumps, their compile state), gone at the end."""

    logs: Path
    private: Path

    @property
    def kept_logs(self) -> Path | None:
        """The logs' folder where the user named one (--log-dir): what is kept there outlives the job."""
        return self.logs if self.logs != self.private else None


@contextmanager
def job_scope(settings: RunSettings, stopping: StopState) -> Iterator[JobFolders]:
    """Around the node's whole job: yields its folders; on the way out, nothing of the job is left running (at once
    when `stopping`, the job's stop, is hurried), and the private folder is gone (the logs stay where --log-dir
    named)."""
    become_subreaper()
    logs = log_folder(settings.log_dir)
    private = make_private_folder() if settings.log_dir is not None else logs
    with keeper(settings.grace_period):
        try:
            with reaping_adopted():
                yield JobFolders(logs, private)
        finally:
            sweep_descendants(settings.grace_period, stopping)
            shutil.rmtree(private, ignore_errors=True)
