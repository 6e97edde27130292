"""A rank's hooks in a torch that lacks one of the private names they reach for (tests/rank/test_torch_seams.py):
argv[1] names the seam (launcher.rank.torch_seams.SEAMS), argv[2] a folder for the compile folder and the stacks.
The seam's name is given a suffix in the table, as a torch that renamed it would look to the rank, while torch
itself stays whole; then every module the hooks watch is imported, a CPU-feature probe is picked and a graph's count
is kept, and one JSON line says what the compile cache's backend and switch became."""

from __future__ import annotations

import json
import os
import sys

seam_name, folder = sys.argv[1], sys.argv[2]
os.environ.update({"ACCEL_COMPILE_CACHE": "job", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "RANK": "0",
                   "ACCEL_COMPILE_CACHE_DIR": os.path.join(folder, "kept"), "ACCEL_STACKS_DIR": folder})

from dataclasses import replace  # noqa: E402

from launcher.rank import torch_seams  # noqa: E402
from launcher.rank.compile_cache.install import share_compiles  # noqa: E402
from launcher.rank.compile_state import note_compiles  # noqa: E402

torch_seams.SEAMS[seam_name] = replace(torch_seams.SEAMS[seam_name],
                                       attribute=torch_seams.SEAMS[seam_name].attribute + "_renamed")
share_compiles()
note_compiles()

import torch  # noqa: E402
import torch._dynamo  # noqa: E402, F401
import torch._functorch.config  # noqa: E402, F401
import torch._inductor.compile_fx  # noqa: E402, F401
import torch._inductor.config as inductor_config  # noqa: E402
import torch._inductor.remote_cache as remote_cache  # noqa: E402
from torch._inductor import cpu_vec_isa  # noqa: E402

from launcher.rank.compile_cache.graph_cache import count  # noqa: E402

cpu_vec_isa.pick_vec_isa()
count("graph_from_node")
override = getattr(remote_cache.RemoteFxGraphCache, "backend_override_cls", None)
print(json.dumps({"backend": type(override()).__name__ if override is not None else None,
                  "switch": getattr(inductor_config, "fx_graph_remote_cache", "gone")}))
