"""The rendezvous of a job on one node: the agent's own store, on a port the kernel picks, at once.

torch's c10d rendezvous (what `torchrun --standalone` uses) took 0.2-0.3 s on the 2-core bench machine
to agree with itself, before any rank started; a node alone waits for nobody. Like torch's static
rendezvous, the agent hosts a TCPStore that its ranks share (`use_agent_store`, and torch gives every
attempt's process group its own prefix in it); unlike that one, the store listens on port 0, so two
launches on one machine never race for a port, and the ranks get the port it was given.

Imports torch: only on the path that starts the elastic agent.
"""

from __future__ import annotations

import socket
from datetime import timedelta

from torch.distributed import PrefixStore, TCPStore
from torch.distributed.elastic.rendezvous import (
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStoreInfo,
    rendezvous_handler_registry,
)

from launcher.contract.job_config import ONE_NODE_BACKEND

__all__ = ["OneNodeRendezvous", "register_one_node"]


class OneNodeRendezvous(RendezvousHandler):
    """One node, rank 0 of 1; the ranks reach the store at `addr` and the port the store got."""

    def __init__(self, addr: str, run_id: str, timeout: timedelta) -> None:
        self._addr, self._run_id, self._timeout = addr, run_id, timeout
        self._store: TCPStore | None = None

    def get_backend(self) -> str:
        return ONE_NODE_BACKEND

    @property
    def use_agent_store(self) -> bool:
        return True

    def next_rendezvous(self) -> RendezvousInfo:
        if self._store is None:
            self._store = TCPStore(self._addr, 0, 1, True, self._timeout, multi_tenant=True)
        store = PrefixStore(self._run_id, self._store)
        return RendezvousInfo(store, 0, 1, RendezvousStoreInfo(self._addr, self._store.port))

    def is_closed(self) -> bool:
        return False

    def set_closed(self) -> None:
        return None

    def num_nodes_waiting(self) -> int:
        return 0

    def get_run_id(self) -> str:
        return self._run_id

    def shutdown(self) -> bool:
        return True


def _create(params: RendezvousParameters) -> RendezvousHandler:
    # Without a local address the ranks get this host's name, as torch's c10d gives them under torchrun.
    addr = params.local_addr or socket.getfqdn()
    return OneNodeRendezvous(addr, params.run_id, timedelta(seconds=float(params.get("timeout", 600))))


def register_one_node() -> None:
    """Make `one-node` known to torch's rendezvous registry (idempotent)."""
    rendezvous_handler_registry.register(ONE_NODE_BACKEND, _create)
