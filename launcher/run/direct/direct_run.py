"""A one-node job without restarts, started by the launcher itself: no torch in this process.

The launcher binds and listens on the rendezvous socket (store_socket.py), starts rank 0 with that socket
(it hosts the store: launcher/rank/store_host.py), then the other ranks, all at once, in one rank group
(launcher/run/rank_group.py, the engine path's own), and drives it: the first rank to fail stops the others
within --grace-period and is reported; a stop signal, --timeout and SIGUSR1/SIGUSR2 act as on the engine path
(docs/RELIABILITY.md). The job's start and end (the subreaper, the log folder, the sweep) are the engine
path's too (launcher/run/job_scope.py).
"""

from __future__ import annotations

import os
import socket

from launcher.contract.job_config import JobConfig
from launcher.contract.names import AGREEMENT_VAR, LAUNCHER_PID_VAR, STORE_FD_VAR, SUCCESS_STATUS
from launcher.errors import PortBusyError
from launcher.run.direct.store_socket import listen_for_ranks
from launcher.run.job_outcome import Deadline, JobOutcome, JobTimeout
from launcher.run.job_scope import job_scope
from launcher.run.job_signals import RanksStopped, StopState
from launcher.run.rank_group import RankGroup
from launcher.run.rank_logs import RankLogs, default_layout
from launcher.run.rank_start import SIGNALS_VAR, direct_place, rank_command, worker_env
from launcher.run.rendezvous.choice import master_addr, run_id
from launcher.run.stacks.job_stacks import JobStacks
from launcher.signal_rules import stop_outcome

__all__ = ["run_direct"]


def run_direct(config: JobConfig) -> JobOutcome:
    """Run the node's ranks to the end; never leaves a process of the job behind (launcher/run/job_scope.py)."""
    stopping = StopState(config.settings.engine.signals_to_handle)
    with job_scope(config.settings, stopping) as folders:
        try:
            # Node 0 hosts global rank 0, and so the store: only its launcher listens (docs/ARCHITECTURE.md).
            listener = listen_for_ranks(config) if config.node_rank == 0 else None
        except PortBusyError as exc:
            return JobOutcome(exc.exit_status, str(exc))
        job_run_id = run_id(config)
        group = RankGroup(RankLogs(config, default_layout(config, folders.logs, job_run_id), dict(os.environ)),
                          JobStacks(folders.private, folders.logs if config.settings.log_dir is not None else None),
                          stopping)
        outcome = _run(config, group, job_run_id, listener)
        return group.failure_outcome() if outcome is None else outcome


def _run(config: JobConfig, group: RankGroup, job_run_id: str, listener: socket.socket | None) -> JobOutcome | None:
    """Start the ranks; wait for the first failure (None), the last success, a stop signal or the timeout; end
    the group however that wait ended (an internal error too), with the stop signal's own signal if one came."""
    settings = config.settings
    argv = rank_command(config)  # before the ranks run: a signal until here ends the launch at once
    outcome: JobOutcome | None = JobOutcome(SUCCESS_STATUS)
    try:
        with group.stopping.ranks_running(group.send):  # after it, a stop signal only hurries the end
            try:
                _start(config, argv, group, job_run_id, listener)
                if _one_failed(group, Deadline(settings.timeout)):
                    outcome = None
            except RanksStopped as exc:
                outcome = JobOutcome(*stop_outcome(exc.received, "every rank was stopped"))
            except JobTimeout as exc:
                group.report_stacks(exc.reason())
                outcome = exc.outcome()
    finally:
        if listener is not None:
            listener.close()
        group.end(group.stopping.sent, settings.grace_period)
    return outcome


def _start(config: JobConfig, argv: list[str], group: RankGroup, job_run_id: str,
           listener: socket.socket | None) -> None:
    """Rank 0 first, with the listening socket where this node has it (the launcher's copy is closed once the rank
    has it), then the rest."""
    port = listener.getsockname()[1] if listener is not None else config.rendezvous.port
    master = (master_addr(config), port)
    environ = {**os.environ, **config.rank_env, LAUNCHER_PID_VAR: str(os.getpid()),
               SIGNALS_VAR: config.settings.engine.signals_to_handle}
    nodes = config.node_range[0]
    for local_rank in range(config.nproc_per_node):
        env = worker_env(direct_place(config, local_rank, job_run_id, master), environ)
        if nodes > 1:  # no launcher imports torch, so the ranks agree (launcher/rank/node_agreement.py)
            env[AGREEMENT_VAR] = str(config.settings.rdzv_timeout)
        fds: tuple[int, ...] = ()
        if local_rank == 0 and listener is not None:
            env[STORE_FD_VAR], fds = str(listener.fileno()), (listener.fileno(),)
        group.start(local_rank, argv, env, fds)
        if fds:
            listener.close()


def _one_failed(group: RankGroup, deadline: Deadline) -> bool:
    """Wait until every rank succeeded (False) or one failed (True); raises JobTimeout past the deadline."""
    while True:
        state = group.wait(deadline.remaining())
        if state is not None:
            return state == "failed"
