"""One rank's compile cache against the job's store, for tests/rank/compile_cache/test_round_six_store.py: it reaches
the store as a rank of a job that spans nodes does (its secret, MASTER_ADDR and MASTER_PORT from the environment,
at its first compile), does what argv[1] names, and prints what it measured as one JSON line on stdout.

- `stranger`: loads graph-0 (the job's own copy), then asks for graph-1 and the probe library `cabc`, both
  claimed by a stranger, and graph-2, whose header a stranger planted over big chunks;
- `store-dies`: says `waiting`, then asks for `graph`, which a rank of another host claimed, while the test
  kills the store; then asks for another graph, and reaches the gone store afresh, as the next rank would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch.distributed  # noqa: F401  (a rank has torch loaded before its first compile: the peak counts it)
from torch._inductor.remote_cache import RemoteCacheBackend

from launcher.contract.names import COMPILE_WAIT_SECONDS
from launcher.rank.compile_cache.graph_cache import GraphCache, torch_backend
from launcher.rank.compile_cache.install import _Sharing
from launcher.rank.compile_cache.kernels import KernelFiles
from launcher.rank.compile_cache.probes import ProbeLibraries


def peak_mib() -> float:
    """This process's peak resident memory so far (VmHWM), in MiB."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def timed(what: object) -> tuple[object, float]:
    started = time.monotonic()
    result = what()  # type: ignore[operator]
    return result, time.monotonic() - started


def main() -> None:
    folder = Path(sys.argv[2])
    sharing = _Sharing(os.fsencode(os.environ["SECRET"]), "")
    cache = torch_backend(GraphCache, RemoteCacheBackend)(None, sharing._job_share, KernelFiles(folder),
                                                          COMPILE_WAIT_SECONDS)
    found: dict[str, object] = {}
    if sys.argv[1] == "stranger":
        found["graph-0"] = cache.get("graph-0") is not None
        before = peak_mib()
        for key in ("graph-1", "graph-2"):
            entry, found[f"{key} seconds"] = timed(lambda: cache.get(key))
            found[key] = entry is not None
        claimed, found["probe seconds"] = timed(lambda: ProbeLibraries(sharing._job_share).obtain(
            "cabc", folder / "cabc.so"))
        found["probe claimed"] = claimed
        found["peak growth MiB"] = peak_mib() - before
    else:
        print("waiting", flush=True)
        entry, found["graph seconds"] = timed(lambda: cache.get("graph"))
        found["graph"] = entry is not None
        _, found["next graph seconds"] = timed(lambda: cache.get("next graph"))
        job, found["connect seconds"] = timed(_Sharing(os.fsencode(os.environ["SECRET"]), "")._job_share)
        found["connected"] = job is not None
    print(json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
