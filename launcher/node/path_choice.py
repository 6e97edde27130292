"""Which way this node's ranks start: by the launcher itself (the direct path, torch-free), or by torch
elastic's agent (the engine path), and why.

The direct path takes a fixed node count without restarts where each node knows its rank before it starts (one
node; torchrun's static form, `--nnodes N --node-rank R --master-addr A --master-port P`; a hostfile's head, Slurm
or OpenMPI, where the launcher also knows every node's rank count), with nothing that only the engine does: its
ranks start before the launcher would have finished importing torch (docs/ARCHITECTURE.md, "Two paths").
`ACCEL_LAUNCH_PATH=engine` sends every launch to the engine (the tests use it to run each launch both ways).
`engine_reason` is called once, where the job is placed on a node (launcher/node/node_plan.py), with the rendezvous
chosen there; it is kept in `NodePlan.engine_reason`, which the run and the dry run read. A hostfile launch's head
words what every node will decide (`path_text` without a plan).
"""

from __future__ import annotations

from collections.abc import Mapping

from launcher.contract.engine_options import DEFAULT_LOGS_SPECS
from launcher.contract.job_config import AGREEING, AGREEMENT_PREFIX, ONE_NODE_BACKEND, JobConfig
from launcher.contract.names import LAUNCH_PATH_VAR
from launcher.errors import UsageError

__all__ = ["asked_path", "engine_reason", "path_text"]

_PATHS = ("auto", "engine")
# torch elastic's agent runs a watchdog or a health-check server for its ranks when these are set.
_ENGINE_SERVICES = ("TORCHELASTIC_ENABLE_FILE_TIMER", "TORCHELASTIC_HEALTH_CHECK_PORT")
# torch 2.13's agent stops the ranks when one stays in uninterruptible sleep (D state) longer than this many seconds.
_UNINTERRUPTIBLE_VAR = "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"


def asked_path(environ: Mapping[str, str]) -> str:
    """The path ACCEL_LAUNCH_PATH asks for (`auto` when unset); UsageError for anything else."""
    asked = environ.get(LAUNCH_PATH_VAR, "").strip() or "auto"
    if asked not in _PATHS:
        raise UsageError(LAUNCH_PATH_VAR, asked, f"expected one of {', '.join(_PATHS)}")
    return asked


def engine_reason(job: JobConfig, handler: str, environ: Mapping[str, str]) -> str | None:
    """Why this launch, meeting the other nodes through the rendezvous handler `handler`, needs torch elastic's
    agent; None when the launcher starts the ranks itself."""
    asked = asked_path(environ)
    settings, engine = job.settings, job.settings.engine
    low, high = job.node_range
    backend = handler.removeprefix(AGREEMENT_PREFIX)
    placed = job.node_rank_known and backend in AGREEING  # the endpoint is node 0's master port
    meets = not placed and (bool(job.rdzv_endpoint) or backend not in (ONE_NODE_BACKEND, "static"))
    reasons = (
        (asked == "engine", f"{LAUNCH_PATH_VAR}=engine"),
        (low != high, "a node range (--nnodes MIN:MAX)"),
        (settings.max_restarts > 0, "--max-restarts above 0"),
        (meets, "a rendezvous endpoint to meet at" if high == 1 else
         "several nodes meeting at a rendezvous endpoint, where a node learns its rank only there"),
        (placed and not job.rank_counts, "several nodes whose rank counts the launcher does not know before they "
         "start (no hostfile's table, and --nproc-per-node is not a number)"),
        (job.program.mode == "exec", "--no-python (rank 0 runs no bootstrap to host the store)"),
        (engine.event_log_handler != "null", "--event-log-handler"),
        (bool(engine.duplicate_stdout_filters or engine.duplicate_stderr_filters), "--duplicate-*-filters"),
        (engine.logs_specs != DEFAULT_LOGS_SPECS, f"--logs-specs {engine.logs_specs} (a torch elastic log layout)"),
        (any(environ.get(name) for name in _ENGINE_SERVICES),
         f"{' or '.join(_ENGINE_SERVICES)} (the agent's own services)"),
        (_positive(environ.get(_UNINTERRUPTIBLE_VAR)), f"{_UNINTERRUPTIBLE_VAR} (the agent's check of ranks in "
         "uninterruptible sleep)"),
    )
    return next((why for needed, why in reasons if needed), None)


def _positive(text: str | None) -> bool:
    """Whether torch reads `text` as a positive number of seconds (it ignores anything else)."""
    try:
        return text is not None and float(text) > 0
    except ValueError:
        return False


def path_text(job: JobConfig, reason: str | None) -> str:
    """The dry-run's row: which path, and why (`reason`, as the job placed on a node decided it)."""
    if reason is None and job.node_range[1] > 1:
        if job.node_rank_known:
            return ("direct: each node's launcher starts its ranks itself (a fixed node count, each node's rank and "
                    f"rank count known before it starts, no restarts); global rank 0 hosts the store on node 0, at "
                    f"{job.rdzv_endpoint}")
        return ("direct: each node's launcher starts its ranks itself (a fixed node count, its node rank known, no "
                "restarts); global rank 0 hosts the store on node 0's --master-port")
    if reason is None:
        return "direct: the launcher starts the ranks itself (one node, no restarts); rank 0 hosts the store"
    return f"engine: torch elastic's agent starts the ranks ({reason})"
