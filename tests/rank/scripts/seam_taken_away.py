"""A rank's hooks in a torch that lacks one of the private names they reach for (tests/rank/test_torch_seams.py):
argv[1] names the seam (launcher.rank.torch_seams.SEAMS), argv[2] a folder for the compile folder, inductor's cache
and the stacks. The seam's name is given a suffix in the table, as a torch that renamed it would look to the rank,
while torch itself stays whole; then every module the hooks watch is imported, a CPU-feature probe is picked and a
graph's count is kept, a compile without a backend is made (the resolved one, eager), the graph cache's backend is
asked for a graph, given it and asked again, and one JSON line says what the compile cache's backends and switch
became and what torch's cache statistics counted for them."""

from __future__ import annotations

import dataclasses
import json
import os
import sys

seam_name, folder = sys.argv[1], sys.argv[2]
os.environ.update({"ACCEL_COMPILE_CACHE": "job", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "RANK": "0",
                   "ACCEL_COMPILE_CACHE_DIR": os.path.join(folder, "kept"), "ACCEL_STACKS_DIR": folder,
                   "TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "cache")})

from dataclasses import replace  # noqa: E402

from accelerators import get_accelerator  # noqa: E402
from launcher.contract.resolved_backend import ResolvedBackend  # noqa: E402
from launcher.rank import torch_seams  # noqa: E402
from launcher.rank.compile_hook import install_compile_hook  # noqa: E402
from launcher.rank.compile_cache.install import share_compiles  # noqa: E402
from launcher.rank.compile_state import note_compiles  # noqa: E402

torch_seams.SEAMS[seam_name] = replace(torch_seams.SEAMS[seam_name],
                                       attribute=torch_seams.SEAMS[seam_name].attribute + "_renamed")
share_compiles()
note_compiles()
accelerator = get_accelerator()
accelerator.set_compile_backend("eager")  # not torch's own default, so that a default left alone shows
install_compile_hook(accelerator, ResolvedBackend("eager", "--compile-backend", "eager"))

import torch  # noqa: E402
import torch._dynamo  # noqa: E402, F401
import torch._functorch.config  # noqa: E402, F401
import torch._inductor.compile_fx  # noqa: E402, F401
import torch._inductor.config as inductor_config  # noqa: E402
import torch._inductor.remote_cache as remote_cache  # noqa: E402
from torch._inductor import cpu_vec_isa  # noqa: E402

from launcher.rank.compile_cache.graph_cache import count  # noqa: E402

cpu_vec_isa.pick_vec_isa()
torch.compile(lambda x: x)  # a compile without a backend: what is torch's default now
count("graph_from_node")
backends = {cache: override() for cache in ("RemoteFxGraphCache", "RemoteAOTAutogradCache", "RemoteDynamoPGOCache")
            if (override := getattr(getattr(remote_cache, cache), "backend_override_cls", None)) is not None}
graphs = backends.get("RemoteFxGraphCache")
if graphs is not None:
    graphs.get("graph")
    graphs.put("graph", b"the compiled graph")
    graphs.get("graph")
print(json.dumps({"backend": type(graphs).__name__ if graphs is not None else None,
                  "default": torch.compiler.get_default_backend(),
                  "switch": getattr(inductor_config, "fx_graph_remote_cache", "gone"),
                  "backends": {cache: type(backend).__name__ for cache, backend in backends.items()},
                  "torch's own": all(isinstance(each, remote_cache.RemoteCacheBackend) for each in backends.values()),
                  "counted": {name.removeprefix("backend:"): dataclasses.asdict(stat)
                              for name, stat in remote_cache.cache_stats._stats.items()}}))
