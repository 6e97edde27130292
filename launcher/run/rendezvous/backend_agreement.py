"""Rendezvous handlers `accel-c10d` and `accel-static`: torch's `c10d` and `static`, plus a check that
every node launcher resolved the same compile backend, made between the node launchers (not the ranks).

After the inner handler's `next_rendezvous`, each node writes its `BackendClaim` into the round's store
under its rendezvous rank and reads every other node's. When they differ, every node raises
`BackendMismatchError`, which names both backends, hosts and sources; before raising it waits (briefly)
until every node has read all claims, so that the node hosting the store does not leave first.

The node's claim comes from the rendezvous configuration (`rdzv_configs` of the launch config):
`accel_backend`, `accel_backend_source`, `accel_host`. The inner handler is made with the node's
placement (`launcher.run.rendezvous.inner_handler`); a c10d wait that runs out says who came and how many
never did.

This module imports torch: import it only on the path that starts the elastic agent, never on the
launcher's torch-free fast path (`launcher.multinode` does not re-export it).
"""

from __future__ import annotations

from datetime import timedelta

from torch.distributed import Store
from torch.distributed.elastic.rendezvous import (
    RendezvousError,
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousTimeoutError,
    rendezvous_handler_registry,
)

from launcher.run.rendezvous.arrivals import Arrivals
from launcher.run.rendezvous.backend_claims import BackendClaim, disagreement
from launcher.run.rendezvous.inner_handler import inner_handler

__all__ = ["BackendMismatchError", "AgreeingRendezvousHandler", "agree", "register_handlers", "CLAIM_KEYS"]

CLAIM_KEYS = ("accel_backend", "accel_backend_source", "accel_host")
AGREEMENT_TIMEOUT = timedelta(seconds=60)
_CLAIM = "accel/compile_backend/{}"
_READ = "accel/compile_backend_read/{}"


class ArrivalsTimeoutError(RendezvousTimeoutError):
    """The rendezvous wait ran out; the message already says where, who came and how many never did."""


class BackendMismatchError(RendezvousError):
    """The node launchers of one job resolved different compile backends."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def agree(store: Store, rank: int, world_size: int, claim: BackendClaim, timeout: timedelta) -> None:
    """Publish `claim` as node `rank`, read all `world_size` claims, raise when the backends differ."""
    store.set(_CLAIM.format(rank), claim.encode())
    keys = [_CLAIM.format(other) for other in range(world_size)]
    store.wait(keys, timeout)
    message = disagreement([BackendClaim.decode(store.get(key)) for key in keys])
    if message is None:
        return
    store.set(_READ.format(rank), b"1")
    try:
        store.wait([_READ.format(other) for other in range(world_size)], timeout)
    except RuntimeError:  # DistStoreError included: a peer that hosted the store may be gone already
        pass
    raise BackendMismatchError(message)


class AgreeingRendezvousHandler(RendezvousHandler):
    """`inner`, whose every completed rendezvous is followed by the backend agreement."""

    def __init__(self, name: str, inner: RendezvousHandler, claim: BackendClaim, timeout: timedelta,
                 arrivals: Arrivals | None = None) -> None:
        self._name, self._inner, self._claim, self._timeout = name, inner, claim, timeout
        self._arrivals = arrivals

    def get_backend(self) -> str:
        return self._name

    @property
    def use_agent_store(self) -> bool:
        return self._inner.use_agent_store

    def next_rendezvous(self) -> RendezvousInfo:
        if self._arrivals is not None:
            self._arrivals.note()
        try:
            info = self._inner.next_rendezvous()
        except RendezvousTimeoutError:
            if self._arrivals is None:
                raise
            raise ArrivalsTimeoutError(self._arrivals.timeout_message()) from None
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
    claim = BackendClaim(*(str(params.get(key)) for key in CLAIM_KEYS))
    config = {key: value for key, value in params.config.items() if key not in CLAIM_KEYS}
    inner, arrivals = inner_handler(params, inner_backend, config, claim.host)
    return AgreeingRendezvousHandler(params.backend, inner, claim, AGREEMENT_TIMEOUT, arrivals)


def _create_accel_c10d(params: RendezvousParameters) -> RendezvousHandler:
    return _wrap(params, "c10d")


def _create_accel_static(params: RendezvousParameters) -> RendezvousHandler:
    return _wrap(params, "static")


def register_handlers() -> None:
    """Make `accel-c10d` and `accel-static` known to torch's rendezvous registry (idempotent)."""
    rendezvous_handler_registry.register("accel-c10d", _create_accel_c10d)
    rendezvous_handler_registry.register("accel-static", _create_accel_static)
