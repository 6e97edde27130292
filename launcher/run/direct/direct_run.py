"""A one-node job without restarts, started by the launcher itself: no torch in this process.

The launcher binds and listens on the rendezvous socket (store_socket.py), starts rank 0 with that socket
(it hosts the store: launcher/rank/store_host.py), then the other ranks, all at once, and watches them. The
first rank to fail stops the others within --grace-period and is reported as on the engine path (its error
file's root cause, its last lines of stderr); a stop signal, --timeout and SIGUSR1/SIGUSR2 act as there
(docs/RELIABILITY.md). Whatever is left is swept, and the private log folder removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
from dataclasses import dataclass

from launcher.contract.job_config import JobConfig
from launcher.contract.names import STORE_FD_VAR, TIMEOUT_STATUS
from launcher.errors import PortBusyError
from launcher.run.direct.rank_logs import RankLogs
from launcher.run.direct.ranks import Ranks
from launcher.run.direct.store_socket import listen_for_ranks
from launcher.run.direct.worker_env import worker_env
from launcher.run.failure.exit_times import ExitTimes
from launcher.run.failure.first_failure import first_failure, lost_peer_note
from launcher.run.failure.rank_failure import exit_status, failure_from_engine, tail_lines
from launcher.run.leftovers import log_folder
from launcher.run.rank_process import rank_command
from launcher.run.rank_stop import stop_ranks
from launcher.run.reaper import become_subreaper, reaping_adopted, sweep_descendants
from launcher.run.rendezvous.choice import master_addr, run_id
from launcher.run.spawn import JobOutcome
from launcher.signal_rules import forward_action, hurry_stop, set_stop_action, stop_outcome

__all__ = ["run_direct"]

# How long the copies of the ranks' output may take to reach the end of their pipes once the ranks are gone.
_COPY_DRAIN_SECONDS = 2.0


class _Stopped(Exception):
    """A stop signal came while the ranks ran: the one received, and the one the ranks get."""

    def __init__(self, received: int, sent: int) -> None:
        super().__init__(received)
        self.received, self.sent = received, sent


class _TimedOut(Exception):
    """--timeout ran out."""


@dataclass(frozen=True)
class _Failed:
    """A rank that exited with a non-zero status, with the fields first_failure reads of torch's ProcessFailure
    (its exit times are known here, so torch's whole-second timestamp is never needed)."""

    local_rank: int
    pid: int
    exitcode: int
    timestamp: float = 0.0


def run_direct(config: JobConfig) -> JobOutcome:
    """Run the node's ranks to the end; never leaves a process of the job behind."""
    settings = config.settings
    become_subreaper()
    log_root = log_folder(config.settings.log_dir)
    ranks = Ranks()
    try:
        try:
            # Node 0 hosts global rank 0, and so the store: only its launcher listens (docs/ARCHITECTURE.md).
            listener = listen_for_ranks(config) if config.node_rank == 0 else None
        except PortBusyError as exc:
            return JobOutcome(1, str(exc))
        logs = RankLogs(config, log_root, run_id(config))
        with reaping_adopted():
            outcome = _run(config, ranks, logs, listener)
        sweep_descendants(grace_seconds=settings.grace_period)
        logs.finish(_COPY_DRAIN_SECONDS)
        return _failed(config, ranks, logs) if outcome is None else outcome
    except BaseException:
        set_stop_action(hurry_stop)
        ranks.kill()
        sweep_descendants(grace_seconds=settings.grace_period)
        raise
    finally:
        if settings.log_dir is None:
            shutil.rmtree(log_root, ignore_errors=True)


def _run(config: JobConfig, ranks: Ranks, logs: RankLogs, listener: socket.socket | None) -> JobOutcome | None:
    """Start the ranks; wait for the first failure (None), the last success, a stop signal or the timeout; stop
    the ranks still running."""
    settings = config.settings
    passed = {signal.Signals[name.strip()] for name in settings.engine.signals_to_handle.split(",") if name.strip()}
    received: list[int] = []

    def stop(signum: int) -> None:
        if received:
            hurry_stop(signum)
            return
        received.append(signum)
        raise _Stopped(signum, signum if signum in passed else signal.SIGTERM)

    argv = rank_command(config)  # before the stop action: a signal until here ends the launch at once
    outcome: JobOutcome | None = JobOutcome(0)
    death_sig = signal.SIGTERM
    set_stop_action(stop)
    try:
        with forward_action(ranks.send, stop_instead=passed):
            _start(config, argv, ranks, logs, listener)
            if _one_failed(ranks, settings.timeout):
                outcome = None
    except _Stopped as exc:
        outcome, death_sig = JobOutcome(*stop_outcome(exc.received, "every rank was stopped")), exc.sent
    except _TimedOut:
        outcome = JobOutcome(TIMEOUT_STATUS,
                             f"the job ran past --timeout {settings.timeout:g}s; every rank was stopped")
    finally:
        set_stop_action(hurry_stop)
        if listener is not None:
            listener.close()
    by_rank = {config.global_rank(local_rank): process for local_rank, process in ranks.processes.items()}
    stop_ranks(by_rank, death_sig, settings.grace_period, wait=ranks.wait_exits)
    return outcome


def _start(config: JobConfig, argv: list[str], ranks: Ranks, logs: RankLogs, listener: socket.socket | None) -> None:
    """Rank 0 first, with the listening socket where this node has it (the launcher's copy is closed once the rank
    has it), then the rest."""
    port = listener.getsockname()[1] if listener is not None else config.rendezvous.port
    master = (master_addr(config), port)
    environ = dict(os.environ)
    for streams in logs.ranks:
        env = {**worker_env(config, streams.local_rank, logs.run_id, master, environ),
               "TORCHELASTIC_ERROR_FILE": streams.error_file}
        fds: tuple[int, ...] = ()
        if streams.local_rank == 0 and listener is not None:
            env[STORE_FD_VAR], fds = str(listener.fileno()), (listener.fileno(),)
        process = ranks.start(streams.local_rank, argv, env, streams.stdout, streams.stderr, fds)
        logs.start_copies(streams.local_rank, process)
        if fds:
            listener.close()


def _one_failed(ranks: Ranks, timeout: float | None) -> bool:
    """Wait until every rank succeeded (False) or one failed (True); raises _TimedOut past `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while ranks.running():
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise _TimedOut()
        if any(ranks.processes[local_rank].returncode != 0 for local_rank in ranks.wait_exits(remaining)):
            return True
    return False


def _failed(config: JobConfig, ranks: Ranks, logs: RankLogs) -> JobOutcome:
    """The first failure's account, as the engine path gives it (launcher/run/failure/): among the ranks that
    ended with a non-zero status (those the teardown stopped included, as torch elastic counts them), the first
    to exit."""
    exits = ExitTimes()
    exits.exited.update(ranks.exited)
    failures = {config.global_rank(local_rank): _Failed(local_rank, process.pid, process.returncode)
                for local_rank, process in ranks.processes.items() if process.returncode}
    rank, failure = first_failure(failures, exits)
    streams = logs.ranks[failure.local_rank]
    account = failure_from_engine(rank, failure.exitcode, streams.error_file, tail_lines(streams.stderr_log))
    note = lost_peer_note(account.output_tail)
    message = account.summary() if note is None else f"{account.summary()}\n  {note}"
    return JobOutcome(exit_status(failure.exitcode), message, account)
