"""The inner rendezvous handler of `accel-c10d` / `accel-static`, made with the node's placement.

- `accel_node_addr` becomes the handler's `local_addr`: the address the other nodes, and the ranks'
  MASTER_ADDR, reach this node by (torch would use `socket.getfqdn()`);
- `is_host=True` (c10d) makes this node host the store, or join it as a client when its port is already
  taken on this machine (another node launcher here hosts it), as torch's own guess does; `is_host=False`
  joins only; absent, torch guesses from the hostname;
- a c10d handler comes with the `RollCall` of its store, for a timeout that says who came.

Imports torch: only on the path that starts the elastic agent.
"""

from __future__ import annotations

from torch.distributed.elastic.rendezvous import (
    RendezvousConnectionError,
    RendezvousHandler,
    RendezvousParameters,
    rendezvous_handler_registry,
)
from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import create_backend
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

from launcher.run.rendezvous.roll_call import RollCall

__all__ = ["NODE_ADDR_KEY", "placed_handler"]

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
