"""The engine path: a node's ranks started on torch.distributed.elastic's agent, as torchrun runs it (any job the
direct path, launcher/run/direct_run.py, does not take: node ranges, restarts, ...), within the job's scope
(launcher/run/scope/job_scope.py), and how the job ended. The one folder of the run side that imports torch
(docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import sys
from pathlib import Path

from launcher.contract.engine_options import DEFAULT_LOGS_SPECS
from launcher.contract.job_config import AGREEMENT_PREFIX, ONE_NODE_BACKEND, NodePlan
from launcher.contract.names import FAILURE_STATUS
from launcher.contract.program import rank_command
from launcher.errors import LaunchError, LogsSpecsError
from launcher.run.engine import engine_seams
from launcher.run.scope.job_outcome import JobOutcome, JobTimeout
from launcher.run.scope.job_scope import job_scope
from launcher.run.scope.job_signals import RanksStopped, StopState
from launcher.signal_rules import stop_outcome

__all__ = ["run_engine", "silence_engine_logs", "logs_specs_class"]

logger = logging.getLogger(__name__)


def run_engine(plan: NodePlan) -> JobOutcome:
    """Run the node's ranks on torch elastic's agent to the end, as `plan` says; never leaves a process of the job
    behind."""
    config = plan.job
    import_engine()
    from torch.distributed import DistError
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.rendezvous.api import RendezvousError

    from launcher.run.engine.agent_launch import run_agent
    from launcher.run.engine.rendezvous.backend_agreement import (ArrivalsTimeoutError, BackendMismatchError,
                                                                  NodeRecordError, NodeTakenError)

    gc.freeze()  # torch's import-time objects outlive the job: keep them out of every collection and the exit's
    # torch's agent reads its variables (the restart store's) from its own environment, as a plugin may
    os.environ.update(plan.environ)
    stopping = StopState(config.settings.engine.signals_to_handle)
    with job_scope(config.settings, stopping) as folders:
        try:
            _register_handler(plan.rendezvous.backend)
            return run_agent(plan, rank_command(config.program), _logs_specs(plan, folders.logs), folders, stopping)
        except RanksStopped as exc:
            return JobOutcome(*stop_outcome(exc.received, "every rank was stopped"))
        except SignalException as exc:  # torch's own agent (engine_seams.py) took the signal, as under torchrun
            return JobOutcome(*stop_outcome(exc.sigval, "every rank was stopped"))
        except JobTimeout as exc:
            return exc.outcome()
        except BackendMismatchError as exc:
            return JobOutcome(exc.exit_status, str(exc))
        except (ArrivalsTimeoutError, NodeRecordError, NodeTakenError) as exc:
            return JobOutcome(exc.exit_status, f"rendezvous failed: {exc}")
        except (RendezvousError, DistError) as exc:  # DistError: the static rendezvous's store never answered
            detail = " ".join(str(exc).split()) or type(exc).__name__
            return JobOutcome(FAILURE_STATUS, f"rendezvous at {plan.rendezvous.endpoint} failed (a node is gone, "
                                              f"or never came within --rdzv-timeout {config.settings.rdzv_timeout} "
                                              f"s): {detail}")


def import_engine() -> None:
    """Import torch's elastic engine with the collector off, and keep what it made out of later collections: the
    import makes some 160,000 objects the collector tracks, and the collections they set off made a one-rank
    engine launch take 1.33 s instead of 1.15 s here (the ranks do the same with torch: rank/bootstrap.py)."""
    if "torch.distributed.launcher.api" in sys.modules:
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        from torch.distributed.launcher import api  # noqa: F401
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def silence_engine_logs() -> None:
    """Mute torch elastic's loggers (each sets its own level at import), whose tables our summary replaces."""
    import_engine()  # creates the engine's loggers

    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("torch.distributed.elastic", "torch.distributed.launcher")):
            logging.getLogger(name).setLevel(logging.CRITICAL)


@functools.cache
def logs_specs_class(name: str) -> type:
    """The class of a --logs-specs plugin, loaded once by torchrun's own loader; LogsSpecsError when its code
    fails, or this torch has no loader (launcher/run/engine/engine_seams.py; the launch checks it before anything
    starts)."""
    load = engine_seams.found("logs_specs_loader", quiet=True)
    if load is engine_seams.ABSENT:
        seam = engine_seams.SEAMS["logs_specs_loader"]
        raise LaunchError(f"--logs-specs {name!r}: torch {engine_seams.torch_version()} has no "
                          f"{seam.module}.{seam.attribute}, torchrun's loader of the plugin; leave the flag out "
                          "(torch's own layout of the logs)")
    try:
        return load(name)
    except BaseException as exc:  # noqa: BLE001  (the plugin's import is user code: whatever it raises)
        raise LogsSpecsError(name, exc) from None


def _logs_specs(plan: NodePlan, log_root: Path) -> object:
    """torch's layout, which keeps the logs in a private folder of ours (`log_root`); or a --logs-specs plugin
    (loaded by torchrun's own loader from the torchrun.logs_specs entry points), which gets --log-dir as torchrun
    gives it. Either way the rank group writes where the layout says (launcher/run/group/rank_logs.py)."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std

    settings = plan.job.settings
    engine = settings.engine
    layout = dict(redirects={rank: Std(redirected) for rank, (redirected, _) in enumerate(plan.streams)},
                  tee={rank: Std(teed) for rank, (_, teed) in enumerate(plan.streams)},
                  local_ranks_filter=set(engine.local_ranks_filter) or None)
    if engine.logs_specs == DEFAULT_LOGS_SPECS:
        return DefaultLogsSpecs(log_dir=str(log_root), **layout)
    return logs_specs_class(engine.logs_specs)(log_dir=settings.log_dir, **layout)


def _register_handler(backend: str) -> None:
    """Put our rendezvous handler `backend`, where it is one of ours, in torch's registry."""
    if backend.startswith(AGREEMENT_PREFIX):
        from launcher.run.engine.rendezvous.backend_agreement import register_handlers

        register_handlers()
    elif backend == ONE_NODE_BACKEND:
        from launcher.run.engine.rendezvous.one_node import register_one_node

        register_one_node()
