"""A one-node job without restarts, started by the launcher itself: no torch in this process.

The launcher binds and listens on the rendezvous socket before any rank starts (`listen_for_ranks`), starts rank 0
with that socket (it hosts the store: launcher/rank/store_host.py), then the other ranks, all at once, in one rank group
(launcher/run/group/rank_group.py, the engine path's own), and drives it: the first rank to fail stops the others
within --grace-period and is reported; a stop signal, --timeout and SIGUSR1/SIGUSR2 act as on the engine path
(docs/RELIABILITY.md). The job's start and end (the subreaper, the log folder, the sweep) are the engine
path's too (launcher/run/scope/job_scope.py).

Rank 0 hosts torch's TCPStore on the socket; the other ranks connect as torch's env:// does. The launcher listens
before any rank exists, so a rank's connect waits in the backlog until rank 0 accepts it, and two launches on one
machine never race for a port (port 0: the kernel picks one). Like TCPStore's own server, it listens on every
address (IPv6 and IPv4 where the host has both).
"""

from __future__ import annotations

import socket

from launcher.contract.job_config import NodePlan
from launcher.contract.names import AGREEMENT_VAR, STORE_FD_VAR, SUCCESS_STATUS
from launcher.contract.program import rank_command
from launcher.errors import PortBusyError
from launcher.run.scope.job_outcome import Deadline, JobOutcome, JobTimeout
from launcher.run.scope.job_scope import job_scope
from launcher.run.scope.job_signals import RanksStopped, StopState
from launcher.run.group.rank_group import RankGroup
from launcher.run.group.rank_logs import RankLogs, default_layout
from launcher.run.group.rank_start import worker_env
from launcher.run.stacks.job_stacks import JobStacks
from launcher.signal_rules import stop_outcome

__all__ = ["run_direct"]

_BACKLOG = 4096  # every rank's connect fits while rank 0 starts (the kernel caps it at somaxconn)


def run_direct(plan: NodePlan) -> JobOutcome:
    """Run the node's ranks to the end; never leaves a process of the job behind (launcher/run/scope/job_scope.py)."""
    settings = plan.job.settings
    stopping = StopState(settings.engine.signals_to_handle)
    with job_scope(settings, stopping) as folders:
        try:
            # Node 0 hosts global rank 0, and so the store: only its launcher listens (docs/ARCHITECTURE.md).
            listener = listen_for_ranks(plan) if plan.node_rank == 0 else None
        except PortBusyError as exc:
            return JobOutcome(exc.exit_status, str(exc))
        group = RankGroup(RankLogs(plan, default_layout(plan, folders.logs)),
                          JobStacks(folders.private, folders.kept_logs),
                          stopping, settings.on_hang)
        outcome = _run(plan, group, listener)
        return group.failure_outcome() if outcome is None else outcome


def _run(plan: NodePlan, group: RankGroup, listener: socket.socket | None) -> JobOutcome | None:
    """Start the ranks; wait for the first failure (None), the last success, a stop signal or the timeout; end
    the group however that wait ended (an internal error too), with the stop signal's own signal if one came."""
    settings = plan.job.settings
    argv = rank_command(plan.job.program)  # before the ranks run: a signal until here ends the launch at once
    outcome: JobOutcome | None = JobOutcome(SUCCESS_STATUS)
    try:
        with group.stopping.ranks_running(group.send):  # after it, a stop signal only hurries the end
            try:
                _start(plan, argv, group, listener)
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


def _start(plan: NodePlan, argv: list[str], group: RankGroup, listener: socket.socket | None) -> None:
    """Rank 0 first, with the listening socket where this node has it (the launcher's copy is closed once the rank
    has it), then the rest."""
    port = listener.getsockname()[1] if listener is not None else plan.rendezvous.port
    nodes = plan.job.node_range[0]
    for local_rank in range(plan.local_world_size):
        env = worker_env(plan.rank_place(local_rank, (plan.master_addr, port)), plan.environ)
        if nodes > 1:  # no launcher imports torch, so the ranks agree (launcher/rank/node_agreement.py)
            env[AGREEMENT_VAR] = str(plan.job.settings.rdzv_timeout)
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


def listen_for_ranks(plan: NodePlan) -> socket.socket:
    """A listening socket on the rendezvous port (the kernel's pick when none is given): IPv6 and IPv4 where the
    host has IPv6, else IPv4 alone."""
    port = plan.rendezvous.port
    try:
        return _listen(socket.AF_INET6, "::", port)
    except OSError:
        pass
    try:
        return _listen(socket.AF_INET, "0.0.0.0", port)
    except OSError as exc:
        raise PortBusyError(plan.job.settings.master_addr, port, exc.strerror or str(exc)) from None


def _listen(family: socket.AddressFamily, address: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock
