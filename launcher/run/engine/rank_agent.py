"""The rank group as torch elastic's agent runs it: `LocalElasticAgent`'s extension points, no patch; every private
name of torch's agent used here is a seam of launcher/run/engine/engine_seams.py, checked before the agent runs.

torch keeps the rendezvous, the restarts, the membership, its watchdog and health check; each attempt's ranks
are one rank group of ours (launcher/run/group/rank_group.py), as on the direct path: their environment
(rank_start.py), their log destinations (the `--logs-specs` layout's `reify`, the streams copied by us),
their exits, the first failure, the shutdown window, their end (`RankGroup.end`). A stop signal raises
RanksStopped inside `run()` (launcher/run/scope/job_signals.py); its `finally` calls torch's own `_shutdown`, whose
close of the attempt's process context ends the group with the signal the ranks get. torch's own
`_monitor_workers` looks at the ranks through that context; --timeout is one deadline, checked before each look.
"""

from __future__ import annotations

import math
import signal
import time
from typing import Any

from torch.distributed.elastic.agent.server.api import RunResult, WorkerGroup, WorkerSpec, WorkerState
from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
from torch.distributed.elastic.multiprocessing.api import RunProcsResult
from torch.distributed.elastic.utils import macros

from launcher.contract.hosts import this_host
from launcher.contract.job_config import NodePlan, RankPlace
from launcher.run.engine.engine_seams import RANK_GROUP, STUCK_RANKS, found, lacking
from launcher.run.group.rank_group import RankGroup
from launcher.run.group.rank_logs import RankLogs
from launcher.run.group.rank_start import worker_env
from launcher.run.group.terminal_lines import terminal
from launcher.run.scope.job_outcome import Deadline, JobTimeout
from launcher.run.scope.job_scope import JobFolders
from launcher.run.scope.job_signals import StopState
from launcher.run.stacks.job_stacks import JobStacks

__all__ = ["RankGroupAgent"]


class RankGroupAgent(LocalElasticAgent):
    """torch's local agent, each attempt's ranks one RankGroup; `group` is the latest attempt's."""

    def __init__(self, spec: WorkerSpec, logs_specs: Any, plan: NodePlan, stopping: StopState,
                 folders: JobFolders) -> None:
        settings = plan.job.settings
        # torch's name for the grace period (an attempt's close keeps to --grace-period itself)
        super().__init__(spec=spec, logs_specs=logs_specs, shutdown_timeout=math.ceil(settings.grace_period))
        self._plan, self._stopping = plan, stopping
        self._stacks = JobStacks(folders.private, folders.kept_logs)
        self._deadline = Deadline(settings.timeout)
        self.group: RankGroup | None = None
        self.wedged: str | None = None  # set when torch's check found a rank in uninterruptible sleep too long
        self._restart_said: str | None = None  # the restart's line, said once the attempt's ranks are stopped
        self._names_stuck = False  # whether torch's D-state check keeps what names the ranks it stopped

    def fits_this_torch(self) -> bool:
        """Whether this torch has every seam of its agent the rank group needs (launcher/run/engine/engine_seams.py;
        one it lacks is said once, and torch's own agent runs the ranks instead); the D-state check's bookkeeping is
        looked up too, and the ranks it stops named only where it is there."""
        if lacking(RANK_GROUP, self) is not None:
            return False
        self._names_stuck = lacking(STUCK_RANKS, self) is None
        return True

    def send(self, signum: int) -> int:
        """Send `signum` to every running rank of the latest attempt; to how many."""
        return self.group.send(signum) if self.group is not None else 0

    def _start_workers(self, worker_group: WorkerGroup) -> dict[int, Any]:
        if self._stopping.hurried:  # a stop signal came while the last attempt's ranks were stopped: no restart
            self._stopping.stop(self._stopping.hurried)
        spec = worker_group.spec
        envs = {worker.local_rank: self._worker_env(worker_group, worker) for worker in worker_group.workers}
        self._setup_local_watchdog(envs)
        self._setup_healthcheck()
        layout = self._logs_specs.reify(envs)
        self.group = RankGroup(RankLogs(self._plan, layout), self._stacks, self._stopping,
                               self._plan.job.settings.on_hang)
        self._pcontext = _AttemptContext(self.group, self._stopping, self._plan.job.settings.grace_period)
        pids = {}
        for local_rank, env in envs.items():
            argv = [spec.entrypoint, *macros.substitute(list(spec.args), str(local_rank))]
            pids[local_rank] = self.group.start(local_rank, argv, env)
        return pids

    def _worker_env(self, worker_group: WorkerGroup, worker: Any) -> dict[str, str]:
        spec = worker_group.spec
        place = RankPlace(local_rank=worker.local_rank, rank=worker.global_rank, role=spec.role,
                          role_rank=worker.role_rank, group_rank=worker_group.group_rank,
                          local_world_size=spec.local_world_size, world_size=worker.world_size,
                          group_world_size=worker_group.group_world_size, role_world_size=worker.role_world_size,
                          master=(worker_group.master_addr, worker_group.master_port),
                          run_id=spec.rdzv_handler.get_run_id(),
                          restart_count=spec.max_restarts - self._remaining_restarts,
                          max_restarts=spec.max_restarts, use_agent_store=spec.rdzv_handler.use_agent_store,
                          virtual_local_rank=spec.virtual_local_rank,
                          visible_devices_env=self._plan.visible_devices_env)
        return worker_env(place, self._plan.environ)

    def _monitor_workers(self, worker_group: WorkerGroup) -> RunResult:
        try:
            self._deadline.remaining()
            result = super()._monitor_workers(worker_group)  # torch's own look, its D-state check included
        except JobTimeout as exc:  # --timeout ran out, or --on-hang stop found a hang (the group's wait raised it):
            if self.group is not None:  # the ranks' stacks, then torch's `run` stops them
                self.group.report_stacks(exc.reason())
            raise
        if result.state == WorkerState.UNHEALTHY:
            self.wedged = self._wedged_note()
        return result

    def _wedged_note(self) -> str:
        """The outcome's words for ranks torch found in uninterruptible sleep past its timeout."""
        if not self._names_stuck:
            return "torch elastic's D-state check stopped the ranks, without a restart"
        timeout, first_seen = found("stuck_timeout", self), found("stuck_first_seen", self)
        now, pids = time.monotonic(), {pid: local_rank for local_rank, pid in self.group.pids().items()}
        ranks = sorted(self.group.ranks[pids[pid]] for pid, first in first_seen.items()
                       if pid in pids and now - first >= timeout)
        return (f"rank {', '.join(map(str, ranks))} on {this_host()} stayed in uninterruptible sleep (D state) past "
                f"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT ({timeout:g}s): torch elastic's check stopped the ranks, "
                "without a restart")

    def _restart_workers(self, worker_group: WorkerGroup) -> None:
        """Say which rank ended the attempt and how, once its ranks are stopped (a failure's stacks come first),
        then restart as torch does."""
        if self.group is not None and self.group.failures():
            restarts = worker_group.spec.max_restarts
            attempt = restarts - self._remaining_restarts + 1  # torch counted this restart already
            self._restart_said = self.group.restart_note(attempt, restarts + 1)
        super()._restart_workers(worker_group)

    def _stop_workers(self, worker_group: WorkerGroup) -> None:
        super()._stop_workers(worker_group)
        if self._restart_said is not None:
            terminal(2).note(self._restart_said)
            self._restart_said = None


class _AttemptContext:
    """An attempt's rank group as torch's agent holds its process context (`_pcontext`): torch's look at the ranks
    (`_monitor_workers`) reads `pids` and `wait`, and torch's `_shutdown` calls `close`, which ends the group within
    --grace-period, with a stop signal's own signal if one came."""

    def __init__(self, group: RankGroup, stopping: StopState, grace_period: float) -> None:
        self._group, self._stopping, self._grace_period = group, stopping, grace_period

    def pids(self) -> dict[int, int]:
        """The attempt's running ranks' pids, by local rank."""
        return self._group.pids()

    def wait(self, timeout: float = -1, period: float = 1) -> RunProcsResult | None:
        """The group's end as torch's process context says it, by local rank; None while the ranks run past
        `timeout` seconds (a negative one: as long as they run, as torch's; its agent only looks, with 0)."""
        state = self._group.wait(timeout if timeout >= 0 else None)
        if state is None:
            return None
        failures = {ended.local_rank: ended for ended in self._group.failures().values()}
        return RunProcsResult(return_values={} if failures else dict.fromkeys(self._group.ranks), failures=failures)

    def close(self, death_sig: signal.Signals = signal.SIGTERM, timeout: int = 30) -> None:
        """End the group; torch's `timeout` is --grace-period already."""
        signum = self._stopping.sent if self._stopping.received is not None else death_sig
        self._group.end(signum, self._grace_period)
