"""Which rendezvous the engine uses for a job: its backend, endpoint and options.

A fixed single node that names no port, no endpoint and no restarts gets our `one-node` handler (its own
store on a free port, nobody to wait for: `one_node.py`). With more than one node the backend is one of
our handlers (`accel-c10d`, `accel-static`, in `backend_agreement`): the engine's own, plus a check that
every node resolved one compile backend (another handler of torch's registry is used as it is). They are
named here, torch-free, so that the plan can show them without importing torch. `rendezvous` is called once,
where the job is placed on a node (launcher.prepare.build_job); the rest read `JobConfig.rendezvous`. The run id,
the master address and standalone-likeness are derived once, in the node's plan (launcher/run/node_plan.py); the
dry-run's table words the master address too (launcher/prepare/plan.py).
"""

from __future__ import annotations

import socket
import uuid

from launcher.contract.job_config import JobConfig, Rendezvous
from launcher.contract.names import DEFAULT_MASTER_PORT, TORCHRUN_RUN_ID

__all__ = ["rendezvous", "master_addr", "run_id", "standalone_like", "AGREEMENT_PREFIX", "ONE_NODE_BACKEND"]

AGREEMENT_PREFIX = "accel-"
ONE_NODE_BACKEND = "one-node"
# torch's handlers that ours wrap with the backend agreement; any other (etcd, a torchrun.handlers plugin) is used
# as torchrun uses it.
AGREEING = ("c10d", "static")


def rendezvous(config: JobConfig) -> Rendezvous:
    """The engine's rendezvous: the given endpoint; else static at master address and port when a port is
    given (or static is asked for); else, for one node without restarts, our one-node store on port 0; else
    c10d on port 0 of this node, which picks a free port itself."""
    settings = config.settings
    timeouts: dict[str, object] = {"timeout": settings.rdzv_timeout, "join_timeout": settings.rdzv_timeout}
    if config.rdzv_endpoint:
        backend, endpoint = settings.rdzv_backend, config.rdzv_endpoint
    elif settings.master_port is not None or settings.rdzv_backend == "static":
        backend, endpoint = "static", f"{settings.master_addr}:{settings.master_port or DEFAULT_MASTER_PORT}"
    elif config.node_range == (1, 1) and settings.rdzv_backend == "c10d" and settings.max_restarts == 0:
        backend, endpoint = ONE_NODE_BACKEND, f"{settings.master_addr}:0"
    else:
        backend, endpoint = settings.rdzv_backend, f"{settings.master_addr}:0"
    options = {"rank": config.node_rank, **timeouts} if backend == "static" else timeouts
    if config.node_range[1] > 1 and backend in AGREEING:
        backend = AGREEMENT_PREFIX + backend
        claim = config.backend.rendezvous_options(socket.gethostname(), config.accelerator)
        options = {**options, **claim, **_store_side(config)}
    return Rendezvous(backend, endpoint, options)


def standalone_like(config: JobConfig) -> bool:
    """True where torchrun runs a job as `--standalone`: asked for, or one node with no endpoint and no port.
    Its ranks then get this host's name as MASTER_ADDR (or --local-addr) and a fresh run id."""
    settings = config.settings
    lone = config.node_range[1] == 1 and not config.rdzv_endpoint and settings.master_port is None
    return settings.engine.standalone or lone


def master_addr(config: JobConfig) -> str:
    """MASTER_ADDR of a job whose ranks meet at a known address, as torchrun gives it: this host's name (or
    --local-addr) for a standalone-like job; the first node's address where a runner said each node's rank (the
    endpoint's host); else --master-addr."""
    settings = config.settings
    if standalone_like(config):
        return settings.engine.local_addr or socket.getfqdn()
    if config.node_rank_known:
        return config.rdzv_endpoint.rpartition(":")[0].strip("[]")
    return settings.master_addr


def run_id(config: JobConfig) -> str:
    """The job's run id on both paths: --rdzv-id, else a fresh uuid where torchrun runs standalone, else `none`."""
    return config.rdzv_id or (str(uuid.uuid4()) if standalone_like(config) else TORCHRUN_RUN_ID)


def _store_side(config: JobConfig) -> dict[str, object]:
    """Which node hosts the store and how the others reach this one, where known (torch guesses otherwise)."""
    side: dict[str, object] = {} if config.node_addr is None else {"accel_node_addr": config.node_addr}
    return side if config.hosts_store is None else {**side, "is_host": config.hosts_store}
