"""One node launcher's rendezvous, driven by the tests: join `accel-c10d`, write the outcome as JSON."""

from __future__ import annotations

import json
import sys

from torch.distributed.elastic.rendezvous import RendezvousParameters, rendezvous_handler_registry

from launcher.run.engine.rendezvous.backend_agreement import BackendMismatchError, register_handlers


def main(endpoint: str, run_id: str, backend: str, host: str, is_host: str, out: str) -> int:
    register_handlers()
    extra = {} if is_host == "auto" else {"is_host": is_host}
    params = RendezvousParameters(
        backend="accel-c10d", endpoint=endpoint, run_id=run_id, min_nodes=2, max_nodes=2, join_timeout=30,
        accel_backend=backend, accel_backend_source="--compile-backend", accel_host=host, accel_accelerator="cpu",
        **extra,
    )
    handler = rendezvous_handler_registry.create_handler(params)
    try:
        info = handler.next_rendezvous()
    except BackendMismatchError as exc:
        result, status = {"error": str(exc)}, 3
    else:
        result, status = {"rank": info.rank, "world_size": info.world_size, "backend": handler.get_backend()}, 0
    with open(out, "w") as file:
        json.dump(result, file)
    return status


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
