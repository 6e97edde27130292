"""Starting the ranks of one node on torch.distributed.elastic, and reporting how the job ended.

With launcher/run/direct/direct_run.py (a lone node without restarts, started without torch: `run_job` sends such
a job there), this is the only module that changes process state: it exports the job's environment and runs
the elastic agent within the job's scope (launcher/run/job_scope.py: the subreaper, the log folder, the sweep),
as the direct path does.
"""

from __future__ import annotations

import functools
import gc
import logging
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from launcher.contract.engine_options import DEFAULT_LOGS_SPECS
from launcher.contract.job_config import JobConfig
from launcher.contract.names import FAILURE_STATUS, LAUNCHER_PID_VAR
from launcher.errors import LogsSpecsError
from launcher.run.job_outcome import JobOutcome, JobTimeout
from launcher.run.job_scope import job_scope
from launcher.run.job_signals import RanksStopped, StopState
from launcher.run.rank_start import rank_command
from launcher.run.rendezvous.choice import AGREEMENT_PREFIX, ONE_NODE_BACKEND, run_id, standalone_like
from launcher.run.terminal_lines import TEMPLATE_ENV, rank_streams
from launcher.signal_rules import stop_outcome

__all__ = ["run_job", "silence_engine_logs", "logs_specs_class"]

logger = logging.getLogger(__name__)
# Restartable groups re-form in a store of their own: by default torch elastic lets the ranks share the agent's
# rendezvous store across attempts, so a restart's ranks could read the addresses the previous attempt's ranks
# left there ("Connection refused" in gloo's connectFullMesh, or a hang in init_process_group).
SHARE_STORE_VAR = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


def run_job(config: JobConfig) -> JobOutcome:
    """Run the node's ranks to the end; never leaves a process of the job behind. A job the launcher can start
    itself takes the direct path (launcher/run/direct/), without torch in this process."""
    if config.engine_reason is None:
        from launcher.run.direct.direct_run import run_direct

        return run_direct(config)
    import_engine()
    from torch.distributed import DistError
    from torch.distributed.elastic.rendezvous.api import RendezvousError

    from launcher.run.agent_launch import run_agent
    from launcher.run.rendezvous.backend_agreement import ArrivalsTimeoutError, BackendMismatchError, NodeRecordError

    gc.freeze()  # torch's import-time objects outlive the job: keep them out of every collection and the exit's
    os.environ.update(config.rank_env)
    os.environ.update(_restart_environment(config, os.environ))
    os.environ[LAUNCHER_PID_VAR] = str(os.getpid())
    stopping = StopState(config.settings.engine.signals_to_handle)
    with job_scope(config.settings, stopping) as folders:
        try:
            return run_agent(_elastic_config(config, folders.logs), rank_command(config), config, folders, stopping)
        except RanksStopped as exc:
            return JobOutcome(*stop_outcome(exc.received, "every rank was stopped"))
        except JobTimeout as exc:
            return exc.outcome()
        except BackendMismatchError as exc:
            return JobOutcome(exc.exit_status, str(exc))
        except (ArrivalsTimeoutError, NodeRecordError) as exc:
            return JobOutcome(exc.exit_status, f"rendezvous failed: {exc}")
        except (RendezvousError, DistError) as exc:  # DistError: the static rendezvous's store never answered
            detail = " ".join(str(exc).split()) or type(exc).__name__
            return JobOutcome(FAILURE_STATUS, f"rendezvous at {config.rendezvous.endpoint} failed (a node is gone, "
                                              f"or never came within --rdzv-timeout {config.settings.rdzv_timeout} "
                                              f"s): {detail}")


def _restart_environment(config: JobConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the agent needs for restartable groups (restarts allowed, or a node range that admits new
    nodes): rank 0 of each attempt hosts a fresh store at a port chosen for that attempt. A value the user set is
    kept."""
    low, high = config.node_range
    if (config.settings.max_restarts > 0 or low != high) and SHARE_STORE_VAR not in environ:
        return {SHARE_STORE_VAR: "1"}
    return {}


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
    fails (the launch checks it before anything starts)."""
    from torch.distributed.run import _get_logs_specs_class

    try:
        return _get_logs_specs_class(name)
    except BaseException as exc:  # noqa: BLE001  (the plugin's import is user code: whatever it raises)
        raise LogsSpecsError(name, exc) from None


def _elastic_config(config: JobConfig, log_root: Path):
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.launcher.api import LaunchConfig
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
    own_free_port = endpoint.endswith(":0") and not standalone
    # torch's layout keeps the logs in a private folder of ours; a --logs-specs plugin (loaded by torchrun's own
    # loader from the torchrun.logs_specs entry points) gets --log-dir as torchrun gives it. Either way the rank
    # group writes where the layout says (launcher/run/rank_logs.py).
    layout = dict(redirects=redirects, tee=tee, local_ranks_filter=set(engine.local_ranks_filter) or None)
    if engine.logs_specs == DEFAULT_LOGS_SPECS:
        logs_specs = DefaultLogsSpecs(log_dir=str(log_root), **layout)
    else:
        logs_specs = logs_specs_class(engine.logs_specs)(log_dir=settings.log_dir, **layout)
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
    elastic takes them (launcher/run/terminal_lines.py: rank_streams)."""
    from torch.distributed.elastic.multiprocessing import Std

    streams = rank_streams(config)
    return ({rank: Std(redirected) for rank, (redirected, _) in enumerate(streams)},
            {rank: Std(teed) for rank, (_, teed) in enumerate(streams)})
