"""Rendezvous handlers `accel-c10d` and `accel-static`: torch's `c10d` and `static`, plus a check that
every node launcher resolved the same compile backend, made between the node launchers (not the ranks).

After the inner handler's `next_rendezvous`, the nodes agree in a few store calls each, however many
they are (docs/ARCHITECTURE.md): node 0 publishes its `BackendClaim`; every other node compares its own
with it and, on a difference, writes its own claim with its node number (`NodeClaim`); each node counts itself
in with one `add`, and the last one in writes the verdict that the others wait for: `agreed`, or that differing
claim. On a mismatch every node words the one line naming both claims itself and raises `BackendMismatchError`
with it, and first waits (up to the timeout) until every node has read the verdict, so that the node hosting
the store does not leave first.

What another node wrote is untrusted (docs/RELIABILITY.md, "Nothing another node writes is trusted"): it is
decoded defensively (`BackendClaim.decode`), a wrong shape is a `NodeRecordError` naming the node, and the
node's text reaches the line escaped and shortened (`launcher.escaped.short_line`).

The node's claim comes from the rendezvous configuration (`rdzv_configs` of the launch config), where
`ResolvedBackend.rendezvous_options` put it (launcher.contract.backend). The inner handler is made with the node's
placement (`launcher.run.rendezvous.placed_handler`); a c10d wait that runs out says who came and how many
never did.

This module imports torch: import it only on the path that starts the elastic agent, never on the
launcher's torch-free fast path (`launcher.multinode` does not re-export it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from torch.distributed import Store
from torch.distributed.elastic.rendezvous import (
    RendezvousError,
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousTimeoutError,
    rendezvous_handler_registry,
)

from launcher.contract.backend import CLAIM_KEYS, BackendClaim, ClaimFormatError, NodeClaim
from launcher.escaped import short_line
from launcher.run.rendezvous.placed_handler import placed_handler
from launcher.run.rendezvous.roll_call import RollCall

__all__ = ["BackendMismatchError", "NodeRecordError", "AgreeingRendezvousHandler", "agree", "disagreement",
           "register_handlers"]
AGREEMENT_TIMEOUT = timedelta(seconds=60)
Decoded = TypeVar("Decoded")
_ARRIVALS = "accel/agreement/arrivals"
_AGREED = b"agreed"


class ArrivalsTimeoutError(RendezvousTimeoutError):
    """The rendezvous wait ran out; the message already says where, who came and how many never did."""


class BackendMismatchError(RendezvousError):
    """The node launchers of one job resolved different compile backends."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class NodeRecordError(RendezvousError):
    """What a node wrote to the rendezvous store for the agreement is not what accel-launch writes."""

    def __init__(self, writer: str, problem: str) -> None:
        self.writer, self.problem = writer, problem
        super().__init__(f"what {writer} wrote to the rendezvous store for the backend agreement is not what "
                         f"accel-launch writes: {problem}; run the same accel-launch on every node")


def agree(store: Store, rank: int, world_size: int, claim: BackendClaim, timeout: timedelta) -> None:
    """Agree with the other nodes on `claim` as node `rank` of `world_size`; raise when a backend differs.

    At most 7 store calls per node when all agree (10 when not). A static rendezvous hands every round the
    same store, so each agreement gets its own keys from the count of arrivals (`world_size` per round).
    """
    generation = (store.add(_ARRIVALS, 1) - 1) // world_size
    key = f"accel/agreement/{generation}/{{}}".format
    differing = None
    if rank == 0:
        first = claim
        store.set(key("claim0"), claim.encode())
    else:
        _wait(store, key("claim0"), timeout, "node 0's claim")
        first = _decoded(BackendClaim.decode, store.get(key("claim0")), "node 0")
        if claim.backend != first.backend:
            differing = NodeClaim(rank, claim).encode()
            store.set(key("mismatch"), differing)
    if store.add(key("in"), 1) == world_size:
        if differing is None and store.check([key("mismatch")]):
            differing = store.get(key("mismatch"))
        verdict = _AGREED if differing is None else differing
        store.set(key("verdict"), verdict)
    else:
        _wait(store, key("verdict"), timeout, f"all {world_size} nodes count in", key("in"))
        verdict = store.get(key("verdict"))
    if verdict == _AGREED:
        return
    try:
        message = _mismatch_line(first, verdict, world_size)
    finally:
        _leave_together(store, key("read"), key("all_read"), world_size, timeout)
    raise BackendMismatchError(message)


def disagreement(first: BackendClaim, rank: int, claim: BackendClaim) -> str | None:
    """None when node `rank`'s claim has node 0's backend (`first`), else the one line that names both, each
    node's text escaped and shortened."""
    if claim.backend == first.backend:
        return None
    return (
        f"the nodes resolved different compile backends: node 0 on {short_line(first.host)} has "
        f"{_quoted(first.backend)} (from {short_line(first.source)}), node {rank} on {short_line(claim.host)} has "
        f"{_quoted(claim.backend)} (from {short_line(claim.source)}); "
        "give every node the same --compile-backend or ACCEL_COMPILE_BACKEND"
    )


def _decoded(decode: Callable[[bytes], Decoded], raw: bytes, writer: str) -> Decoded:
    """`decode(raw)`, its ClaimFormatError a NodeRecordError naming `writer`."""
    try:
        return decode(raw)
    except ClaimFormatError as exc:
        raise NodeRecordError(writer, str(exc)) from None


def _mismatch_line(first: BackendClaim, verdict: bytes, world_size: int) -> str:
    """The line for a verdict that is a differing node's claim; NodeRecordError when it is not one."""
    found = _decoded(NodeClaim.decode, verdict, "the node that differed from node 0")
    if not 0 < found.node < world_size:
        raise NodeRecordError("the node that differed from node 0",
                              f"it names node {found.node}, not one of nodes 1 to {world_size - 1}")
    message = disagreement(first, found.node, found.claim)
    if message is None:
        raise NodeRecordError(f"node {found.node}", "it says it differs from node 0 but names node 0's backend")
    return message


def _quoted(text: str) -> str:
    """`text` in quotes, as a backend name is shown: escaped and shortened."""
    return f"'{short_line(text)}'"


def _wait(store: Store, key: str, timeout: timedelta, what: str, counter: str | None = None) -> None:
    """Wait for `key`; when `timeout` runs out, raise saying `what` was awaited (and `counter`'s count)."""
    try:
        store.wait([key], timeout)
    except RuntimeError:  # DistStoreError included: the wait ran out, or the store is gone
        counted = f" ({_count(store, counter)} did)" if counter is not None else ""
        raise RendezvousTimeoutError(
            f"the backend agreement did not see {what} within {timeout.total_seconds():g} s{counted}"
        ) from None


def _count(store: Store, counter: str) -> str:
    """The counter's value, or words for when the store cannot be read."""
    try:
        return str(store.add(counter, 0))
    except RuntimeError:
        return "an unknown number"


def _leave_together(store: Store, read: str, all_read: str, world_size: int, timeout: timedelta) -> None:
    """Count this node as having read the verdict; wait until every node has (the store's host included)."""
    try:
        if store.add(read, 1) == world_size:
            store.set(all_read, b"1")
        else:
            store.wait([all_read], timeout)
    except RuntimeError:  # DistStoreError included: a peer that hosted the store may be gone already
        pass


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
    claim = BackendClaim(*(str(params.get(key)) for key in CLAIM_KEYS))
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
