"""Starting the ranks of one node on torch.distributed.elastic, and reporting how the job ended.

With launcher/run/direct/direct_run.py (a lone node without restarts, started without torch: `run_job` sends such
a job there), this is the only module that changes process state: it exports the job's environment, makes
this launcher the subreaper of its ranks, runs the elastic agent, and sweeps up whatever is left.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from launcher.contract.engine_options import DEFAULT_LOGS_SPECS
from launcher.contract.job_config import JobConfig
from launcher.contract.names import LAUNCHER_PID_VAR, TIMEOUT_STATUS
from launcher.run.failure.exit_times import ExitTimes
from launcher.run.failure.first_failure import first_failure, lost_peer_note
from launcher.run.failure.rank_failure import RankFailure, exit_status, failure_from_engine, tail_lines
from launcher.run.grace import bounded_stops
from launcher.run.job_signals import ranks_running, received_signal
from launcher.run.leftovers import log_folder
from launcher.run.rank_output import TEMPLATE_ENV, rank_streams
from launcher.run.rank_process import rank_command
from launcher.run.reaper import become_subreaper, reaping_adopted, sweep_descendants
from launcher.run.rendezvous.choice import AGREEMENT_PREFIX, ONE_NODE_BACKEND, run_id, standalone_like
from launcher.run.restarts import restart_environment
from launcher.signal_rules import stop_outcome

__all__ = ["JobOutcome", "run_job", "silence_engine_logs"]

logger = logging.getLogger(__name__)
# How long the copies of the ranks' output may take to reach the end of their files once the ranks are gone.
_COPY_DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: its exit status, and the one message the user should read (if any)."""

    status: int
    message: str | None = None
    failure: RankFailure | None = None


class JobTimeout(Exception):
    """Raised in the agent's loop when `--timeout` runs out."""


def run_job(config: JobConfig) -> JobOutcome:
    """Run the node's ranks to the end; never leaves a process of the job behind. A job the launcher can start
    itself takes the direct path (launcher/run/direct/), without torch in this process."""
    if config.engine_reason is None:
        from launcher.run.direct.direct_run import run_direct

        return run_direct(config)
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError
    from torch.distributed.launcher.api import launch_agent

    from launcher.run.rendezvous.backend_agreement import ArrivalsTimeoutError, BackendMismatchError, NodeRecordError

    settings = config.settings
    gc.freeze()  # torch's import-time objects outlive the job: keep them out of every collection and the exit's
    os.environ.update(config.rank_env)
    os.environ.update(restart_environment(config, os.environ))
    os.environ[LAUNCHER_PID_VAR] = str(os.getpid())
    become_subreaper()
    log_root = log_folder(config.settings.log_dir)
    command = rank_command(config)
    exits = ExitTimes()
    elastic = None
    try:
        elastic = _elastic_config(config, log_root)
        with (ranks_running(settings.engine.signals_to_handle), _deadline(settings.timeout),
              bounded_stops(settings.grace_period), exits, reaping_adopted()):
            launch_agent(elastic, command[0], command[1:])
        return JobOutcome(0)
    except ChildFailedError as exc:
        return _failed(exc, log_root, exits, elastic.logs_specs)
    except SignalException as exc:
        return JobOutcome(*stop_outcome(received_signal(exc), "every rank was stopped"))
    except JobTimeout:
        return JobOutcome(TIMEOUT_STATUS, f"the job ran past --timeout {settings.timeout:g}s; every rank was stopped")
    except BackendMismatchError as exc:
        return JobOutcome(2, str(exc))
    except (ArrivalsTimeoutError, NodeRecordError) as exc:
        return JobOutcome(1, f"rendezvous failed: {exc}")
    except RendezvousError as exc:
        where = config.rendezvous.endpoint
        detail = str(exc) or type(exc).__name__
        return JobOutcome(1, f"rendezvous at {where} failed (a node is gone, or never came): {detail}")
    finally:
        sweep_descendants(grace_seconds=settings.grace_period)
        if elastic is not None:
            elastic.logs_specs.finish(_COPY_DRAIN_SECONDS)
        if settings.log_dir is None:
            shutil.rmtree(log_root, ignore_errors=True)


def silence_engine_logs() -> None:
    """Mute torch elastic's loggers (each sets its own level at import), whose tables our summary replaces."""
    from torch.distributed.launcher import api  # noqa: F401  (imports the engine, creating its loggers)

    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("torch.distributed.elastic", "torch.distributed.launcher")):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def _elastic_config(config: JobConfig, log_root: Path):
    from torch.distributed.launcher.api import LaunchConfig

    from launcher.run.engine_tee import LauncherTee
    from launcher.run.failure.error_files import rank_error_files

    settings = config.settings
    engine = settings.engine
    low, high = config.node_range
    redirects, tee = _streams(config)
    meeting = config.rendezvous
    rdzv_backend, endpoint, rdzv_configs = meeting.backend, meeting.endpoint, meeting.options
    if rdzv_backend.startswith(AGREEMENT_PREFIX):
        from launcher.run.rendezvous.backend_agreement import register_handlers

        register_handlers()
    elif rdzv_backend == ONE_NODE_BACKEND:
        from launcher.run.rendezvous.one_node import register_one_node

        register_one_node()
    # Where torchrun runs a job as standalone (c10d on localhost:0) its ranks get this host's name and a fresh
    # run id, and so do ours; a rendezvous of ours on a free port otherwise gives MASTER_ADDR=--master-addr.
    standalone = standalone_like(config)
    filtered = bool(engine.duplicate_stdout_filters or engine.duplicate_stderr_filters)  # read the engine's tee
    own_free_port = endpoint.endswith(":0") and not standalone
    # Our layout keeps the logs in a private folder of ours, its teed streams copied by us; a --logs-specs plugin
    # gets --log-dir as torchrun gives it, and tees as torch does.
    layout = dict(redirects=redirects, tee=tee, local_ranks_filter=set(engine.local_ranks_filter) or None)
    if engine.logs_specs == DEFAULT_LOGS_SPECS:
        logs_specs = LauncherTee(config, engine_tees=filtered, log_dir=str(log_root), **layout)
    else:
        logs_specs = rank_error_files(engine.logs_specs)(log_dir=settings.log_dir, **layout)
    return LaunchConfig(
        min_nodes=low,
        max_nodes=high,
        nproc_per_node=config.nproc_per_node,
        run_id=run_id(config),
        role=engine.role,
        rdzv_backend=rdzv_backend,
        rdzv_endpoint=endpoint,
        rdzv_configs={**rdzv_configs, **engine.rdzv_conf},
        max_restarts=settings.max_restarts,
        monitor_interval=engine.monitor_interval,
        local_addr=engine.local_addr or (settings.master_addr if own_free_port else None),
        logs_specs=logs_specs,
        log_line_prefix_template=os.environ.get(TEMPLATE_ENV) or None,
        event_log_handler=engine.event_log_handler,
        signals_to_handle=engine.signals_to_handle,
        duplicate_stdout_filters=list(engine.duplicate_stdout_filters) or None,
        duplicate_stderr_filters=list(engine.duplicate_stderr_filters) or None,
        virtual_local_rank=engine.virtual_local_rank,
        shutdown_timeout=math.ceil(settings.grace_period),
    )


def _streams(config: JobConfig) -> tuple[dict, dict]:
    """Per local rank, what goes to a file only (redirects) and to a file and the terminal (tee), as torch
    elastic takes them (launcher/run/rank_output.py: rank_streams)."""
    from torch.distributed.elastic.multiprocessing import Std

    streams = rank_streams(config)
    return ({rank: Std(redirected) for rank, (redirected, _) in enumerate(streams)},
            {rank: Std(teed) for rank, (_, teed) in enumerate(streams)})


def _failed(exc, log_root: Path, exits: ExitTimes, logs) -> JobOutcome:
    logs.finish(_COPY_DRAIN_SECONDS)  # the failed rank's last lines reach its log before its tail is read
    rank, failure = first_failure(exc.failures, exits)
    kept = logs.stderrs.get(failure.local_rank)  # where the layout put it; else the default layout's
    log = Path(kept) if kept else _stderr_log(log_root, failure.local_rank)
    tail = tail_lines(log) if log is not None else ()
    account = failure_from_engine(rank, failure.exitcode, logs.error_file(failure.local_rank), tail)
    note = lost_peer_note(account.output_tail)
    message = account.summary() if note is None else f"{account.summary()}\n  {note}"
    return JobOutcome(exit_status(failure.exitcode), message, account)


def _stderr_log(log_root: Path, local_rank: int) -> Path | None:
    candidates = sorted(log_root.glob(f"*/attempt_*/{local_rank}/stderr.log"), key=lambda p: p.stat().st_mtime)
    return candidates[-1] if candidates else None


@contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise JobTimeout in the main thread after `seconds`; the agent then stops the ranks as on any error.
    A SIGALRM from outside, before the deadline, is the stop signal it is at any other time."""
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + seconds

    def expire(signum: int, frame: object) -> None:
        if time.monotonic() < deadline:
            if callable(previous):
                previous(signum, frame)
            return
        raise JobTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
