"""Rendezvous handlers `accel-c10d` and `accel-static`: torch's `c10d` and `static`, plus the agreement
(launcher/agreement.py) between the node launchers: every node resolved the same compile backend and runs node
0's torch, Python and accelerator kind. Its failures become torch's rendezvous errors here
(`BackendMismatchError`, `NodeRecordError`, `NodeTakenError`), which the agent ends the launch with.

The node's claim comes from the rendezvous configuration (`rdzv_configs` of the launch config), where
`ResolvedBackend.rendezvous_options` put it (launcher.contract.resolved_backend), and from this process's torch and
Python. The inner handler is made with the node's placement (`placed_handler`); a c10d wait that runs out says who came
and how many never did.

This module imports torch: import it only on the path that starts the elastic agent, never on the
launcher's torch-free fast path (`launcher.multinode` does not re-export it).

The inner handler's placement:
- `accel_node_addr` becomes the handler's `local_addr`: the address the other nodes, and the ranks'
  MASTER_ADDR, reach this node by (torch would use `socket.getfqdn()`);
- `is_host=True` (c10d) makes this node host the store, or join it as a client when its port is already
  taken on this machine (another node launcher here hosts it), as torch's own guess does; `is_host=False`
  joins only; absent, torch guesses from the hostname;
- a c10d handler comes with the `RollCall` of its store, for a timeout that says who came.
"""

from __future__ import annotations

import platform
from datetime import timedelta

import torch
from torch.distributed import Store
from torch.distributed.elastic.rendezvous import (
    RendezvousConnectionError,
    RendezvousError,
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousTimeoutError,
    rendezvous_handler_registry,
)
from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import create_backend
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

from launcher import agreement
from launcher.agreement import disagreement
from launcher.contract.names import FAILURE_STATUS, VALIDATION_STATUS
from launcher.contract.resolved_backend import CLAIM_KEYS, BackendClaim
from launcher.run.engine.rendezvous.roll_call import RollCall

__all__ = ["BackendMismatchError", "NodeRecordError", "NodeTakenError", "AgreeingRendezvousHandler", "agree", "disagreement",
           "register_handlers", "NODE_ADDR_KEY", "placed_handler"]

AGREEMENT_TIMEOUT = timedelta(seconds=60)


class ArrivalsTimeoutError(RendezvousTimeoutError):
    """The rendezvous wait ran out; the message already says where, who came and how many never did."""

    exit_status = FAILURE_STATUS


class BackendMismatchError(RendezvousError):
    """The node launchers of one job resolved different compile backends."""

    exit_status = VALIDATION_STATUS

    def __init__(self, message: str) -> None:
        super().__init__(message)


class NodeRecordError(RendezvousError):
    """What a node wrote to the rendezvous store for the agreement is not what accel-launch writes."""

    exit_status = FAILURE_STATUS

    def __init__(self, writer: str, problem: str) -> None:
        self.writer, self.problem = writer, problem
        super().__init__(str(agreement.UntrustedRecord(writer, problem)))


class NodeTakenError(RendezvousError):
    """Another node launcher already holds this node's rank in the job (two were given one --node-rank)."""

    exit_status = FAILURE_STATUS


def agree(store: Store, rank: int, world_size: int, claim: BackendClaim, timeout: timedelta) -> None:
    """The agreement (launcher/agreement.py) as node `rank` of `world_size`, its failures torch's rendezvous
    errors, which the engine's agent ends the launch with."""
    try:
        agreement.agree(store, rank, world_size, claim, timeout)
    except agreement.ClaimsDiffer as exc:
        raise BackendMismatchError(str(exc)) from None
    except agreement.UntrustedRecord as exc:
        raise NodeRecordError(exc.writer, exc.problem) from None
    except agreement.AgreementTimeout as exc:
        raise RendezvousTimeoutError(str(exc)) from None
    except agreement.MemberTaken as exc:
        raise NodeTakenError(str(exc)) from None


class AgreeingRendezvousHandler(RendezvousHandler):
    """`inner`, whose every completed rendezvous is followed by the backend agreement."""

    def __init__(self, name: str, inner: RendezvousHandler, claim: BackendClaim, timeout: timedelta,
                 roll_call: RollCall | None = None) -> None:
        self._name, self._inner, self._claim, self._timeout = name, inner, claim, timeout
        self._roll_call = roll_call

    def get_backend(self) -> str:
        return self._name

    @property
    def use_agent_store(self) -> bool:
        return self._inner.use_agent_store

    def next_rendezvous(self) -> RendezvousInfo:
        if self._roll_call is not None:
            self._roll_call.note()
        try:
            info = self._inner.next_rendezvous()
        except RendezvousTimeoutError:
            if self._roll_call is None:
                raise
            raise ArrivalsTimeoutError(self._roll_call.timeout_message()) from None
        agree(info.store, info.rank, info.world_size, self._claim, self._timeout)
        return info

    def is_closed(self) -> bool:
        return self._inner.is_closed()

    def set_closed(self) -> None:
        self._inner.set_closed()

    def num_nodes_waiting(self) -> int:
        return self._inner.num_nodes_waiting()

    def get_run_id(self) -> str:
        return self._inner.get_run_id()

    def shutdown(self) -> bool:
        return self._inner.shutdown()


def _wrap(params: RendezvousParameters, inner_backend: str) -> AgreeingRendezvousHandler:
    missing = [key for key in CLAIM_KEYS if not params.get(key)]
    if missing:
        raise ValueError(f"rendezvous backend {params.backend!r} needs rdzv_configs {', '.join(missing)}")
    backend, source, host, accelerator = (str(params.get(key)) for key in CLAIM_KEYS)
    claim = BackendClaim(backend, source, host, torch=torch.__version__, python=platform.python_version(),
                         accelerator=accelerator)
    config = {key: value for key, value in params.config.items() if key not in CLAIM_KEYS}
    inner, roll_call = placed_handler(params, inner_backend, config, claim.host)
    return AgreeingRendezvousHandler(params.backend, inner, claim, AGREEMENT_TIMEOUT, roll_call)


def _create_accel_c10d(params: RendezvousParameters) -> RendezvousHandler:
    return _wrap(params, "c10d")


def _create_accel_static(params: RendezvousParameters) -> RendezvousHandler:
    return _wrap(params, "static")


def register_handlers() -> None:
    """Make `accel-c10d` and `accel-static` known to torch's rendezvous registry (idempotent)."""
    rendezvous_handler_registry.register("accel-c10d", _create_accel_c10d)
    rendezvous_handler_registry.register("accel-static", _create_accel_static)


NODE_ADDR_KEY = "accel_node_addr"


def placed_handler(params: RendezvousParameters, backend: str, config: dict[str, object],
                  me: str) -> tuple[RendezvousHandler, RollCall | None]:
    """The `backend` handler for `params` with `config` (our own keys removed); `me` names this node."""
    local_addr = params.local_addr or params.get(NODE_ADDR_KEY)
    settings = {key: value for key, value in config.items() if key != NODE_ADDR_KEY}
    if backend != "c10d":
        inner = RendezvousParameters(backend, params.endpoint, params.run_id, params.min_nodes, params.max_nodes,
                                     local_addr, **settings)
        return rendezvous_handler_registry.create_handler(inner), None
    attempts = [True, False] if params.get_as_bool("is_host") else [None]
    for attempt, is_host in enumerate(attempts, start=1):
        tried = settings if is_host is None else {**settings, "is_host": is_host}
        inner = RendezvousParameters(backend, params.endpoint, params.run_id, params.min_nodes, params.max_nodes,
                                     local_addr, **tried)
        try:
            rdzv_backend, store = create_backend(inner)
            break
        except RendezvousConnectionError:
            if attempt == len(attempts):
                raise
    named = f"{me} at {local_addr}" if local_addr and local_addr != me else me
    seconds = float(params.get("join_timeout", 600))
    roll_call = RollCall(store, params.run_id, named, params.endpoint, params.min_nodes, seconds)
    return create_handler(store, rdzv_backend, inner), roll_call
