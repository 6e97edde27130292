"""Which rendezvous this node's launcher meets the others at: its backend, endpoint and options; and what follows
from the job's layout: the run id, the master address, and whether torchrun would run the job as standalone.

A fixed single node that names no port, no endpoint and no restarts gets our `one-node` handler (its own
store on a free port, nobody to wait for: `one_node.py`). With more than one node the backend is one of
our handlers (`accel-c10d`, `accel-static`, in launcher/run/engine/rendezvous/backend_agreement.py): the engine's own,
plus a check that every node resolved one compile backend (another handler of torch's registry is used as it is).
Each is called once, where the job is placed on a node (launcher/node/node_plan.py); the rest read the node's plan.
"""

from __future__ import annotations

import socket
import uuid

from launcher.contract.job_config import AGREEING, AGREEMENT_PREFIX, ONE_NODE_BACKEND, JobConfig, Rendezvous
from launcher.contract.names import DEFAULT_MASTER_PORT, TORCHRUN_RUN_ID
from launcher.node.addresses import Placement

__all__ = ["rendezvous", "meeting_point", "master_addr", "run_id", "standalone_like"]


def rendezvous(job: JobConfig, node_rank: int, accelerator: str, placement: Placement | None) -> Rendezvous:
    """Where node `node_rank`, on `accelerator` and placed among the others at `placement` (None: one node), meets
    them (`meeting_point`), with the handler's options: its timeouts, and with several nodes the node's claim of its
    backend and which node hosts the store."""
    settings = job.settings
    backend, endpoint = meeting_point(job)
    timeouts: dict[str, object] = {"timeout": settings.rdzv_timeout, "join_timeout": settings.rdzv_timeout}
    options = {"rank": node_rank, **timeouts} if backend == "static" else timeouts
    if job.node_range[1] > 1 and backend in AGREEING:
        backend = AGREEMENT_PREFIX + backend
        claim = job.backend.rendezvous_options(socket.gethostname(), accelerator)
        options = {**options, **claim, **_store_side(placement)}
    return Rendezvous(backend, endpoint, options)


def meeting_point(job: JobConfig) -> tuple[str, str]:
    """torch's handler and endpoint: the given endpoint; else static at master address and port when a port is given
    (or static is asked for); else, for one node without restarts, our one-node store on port 0; else c10d on port 0
    of this node, which picks a free port itself."""
    settings = job.settings
    if job.rdzv_endpoint:
        return settings.rdzv_backend, job.rdzv_endpoint
    if settings.master_port is not None or settings.rdzv_backend == "static":
        return "static", f"{settings.master_addr}:{settings.master_port or DEFAULT_MASTER_PORT}"
    if job.node_range == (1, 1) and settings.rdzv_backend == "c10d" and settings.max_restarts == 0:
        return ONE_NODE_BACKEND, f"{settings.master_addr}:0"
    return settings.rdzv_backend, f"{settings.master_addr}:0"


def standalone_like(job: JobConfig) -> bool:
    """True where torchrun runs a job as `--standalone`: asked for, or one node with no endpoint and no port.
    Its ranks then get this host's name as MASTER_ADDR (or --local-addr) and a fresh run id."""
    settings = job.settings
    lone = job.node_range[1] == 1 and not job.rdzv_endpoint and settings.master_port is None
    return settings.engine.standalone or lone


def master_addr(job: JobConfig) -> str:
    """MASTER_ADDR of a job whose ranks meet at a known address, as torchrun gives it: this host's name (or
    --local-addr) for a standalone-like job; the first node's address where a runner said each node's rank (the
    endpoint's host); else --master-addr."""
    settings = job.settings
    if standalone_like(job):
        return settings.engine.local_addr or socket.getfqdn()
    if job.node_rank_known:
        return job.rdzv_endpoint.rpartition(":")[0].strip("[]")
    return settings.master_addr


def run_id(job: JobConfig) -> str:
    """The job's run id on both paths: --rdzv-id, else a fresh uuid where torchrun runs standalone, else `none`."""
    return job.rdzv_id or (str(uuid.uuid4()) if standalone_like(job) else TORCHRUN_RUN_ID)


def _store_side(placement: Placement | None) -> dict[str, object]:
    """Which node hosts the store and how the others reach this one, where known (torch guesses otherwise)."""
    if placement is None:
        return {}
    side: dict[str, object] = {} if placement.node_addr is None else {"accel_node_addr": placement.node_addr}
    return side if placement.hosts_store is None else {**side, "is_host": placement.hosts_store}
