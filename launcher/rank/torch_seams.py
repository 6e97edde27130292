"""The rank's side of torch's private surface, in one table: every private torch name a rank reaches into (the
compile cache's hooks, the compile state the stacks and the watch read, the quiet store calls), with the feature it
serves (docs/CONTRACT.md sections 7 and 8). The launcher's side is launcher/run/engine/engine_seams.py.

Each hook looks its names up here, in the module whose import called it (nothing is imported here). A torch that
lacks one turns that one feature off in the rank, said once in the job (by rank 0), and the user's imports and job
run as under torchrun; a torch upgrade is reviewed against this table (tests/rank/test_torch_seams.py takes each
away in turn). One seam is not a Python name: c10's log level, `FLAGS_caffe2_log_level` in libc10, found by its
symbol (launcher/rank/compile_cache/store_calls.py); without it torch's own lines about a failed store call stand.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["Seam", "SEAMS", "COMPILE_ONCE", "COMPILE_FOLDER", "CPU_PROBES", "COUNTERS", "COMPILE_STATE",
           "DEFAULT_BACKEND", "holder", "missing"]

COMPILE_ONCE = "compile once per job (this rank compiles every graph itself, as under torchrun)"
COMPILE_FOLDER = "keeping the AOTAutograd entries and profile-guided state (each job traces its graphs again)"
CPU_PROBES = "sharing inductor's CPU-feature probes across nodes (each node builds its own)"
COUNTERS = "accel-launch's counts beside inductor's cache hits (torch._dynamo.utils.counters['accel_launch'])"
DEFAULT_BACKEND = ("the resolved backend as torch's default backend, as torch.compiler.get_default_backend() says it "
                   "(a torch.compile without a backend still uses it)")
COMPILE_STATE = "the compile state that `accel-launch stacks` and the watch show (a compiling rank is not named so)"


@dataclass(frozen=True)
class Seam:
    """A private name: `attribute` (dotted) of `module`, and the feature a torch without it turns off."""

    module: str
    attribute: str
    feature: str


SEAMS: dict[str, Seam] = {
    "fx_remote_switch": Seam("torch._inductor.config", "fx_graph_remote_cache", COMPILE_ONCE),
    "fx_remote_backend": Seam("torch._inductor.remote_cache", "RemoteFxGraphCache.backend_override_cls", COMPILE_ONCE),
    "remote_cache_backend": Seam("torch._inductor.remote_cache", "RemoteCacheBackend", COMPILE_ONCE),
    "autograd_remote_backend": Seam("torch._inductor.remote_cache", "RemoteAOTAutogradCache.backend_override_cls",
                                    COMPILE_FOLDER),
    "pgo_remote_backend": Seam("torch._inductor.remote_cache", "RemoteDynamoPGOCache.backend_override_cls",
                               COMPILE_FOLDER),
    "autograd_remote_switch": Seam("torch._functorch.config", "enable_remote_autograd_cache", COMPILE_FOLDER),
    "pgo_remote_switch": Seam("torch._dynamo.config", "automatic_dynamic_remote_pgo", COMPILE_FOLDER),
    "load_library": Seam("torch._inductor.codecache", "CppCodeCache._load_library", COMPILE_ONCE),
    "cache_dir": Seam("torch._inductor.runtime.cache_dir_utils", "cache_dir", COMPILE_ONCE),
    "compile_fx_inner": Seam("torch._inductor.compile_fx", "_compile_fx_inner", COMPILE_ONCE),
    "isa_fingerprint": Seam("torch._inductor.cpu_vec_isa", "_get_isa_dry_compile_fingerprint", CPU_PROBES),
    "check_build": Seam("torch._inductor.cpu_vec_isa", "VecISA.check_build", CPU_PROBES),
    "lock_timeout": Seam("torch._inductor.codecache", "LOCK_TIMEOUT", CPU_PROBES),
    "lock_dir": Seam("torch._inductor.codecache", "get_lock_dir", CPU_PROBES),
    "write_source": Seam("torch._inductor.codecache", "write", CPU_PROBES),
    "file_lock": Seam("torch.utils._filelock", "FileLock", CPU_PROBES),
    "counters": Seam("torch._dynamo.utils", "counters", COUNTERS),
    "compile_callbacks": Seam("torch._dynamo", "callback_handler.register_start_callback", COMPILE_STATE),
    "compile_end_callbacks": Seam("torch._dynamo", "callback_handler.register_end_callback", COMPILE_STATE),
    "default_backend_set": Seam("torch._dynamo.backends.registry", "set_default_backend", DEFAULT_BACKEND),
    "default_backend_get": Seam("torch._dynamo.backends.registry", "get_default_backend", DEFAULT_BACKEND),
}

_said: set[str] = set()


def holder(name: str, module: ModuleType) -> tuple[Any, str] | None:
    """Where SEAMS[name] lives in `module` (the hook's own, already imported): the object that holds its last part,
    and that part's name; None when this torch lacks it (its feature is then off in this rank, said once)."""
    *path, last = SEAMS[name].attribute.split(".")
    found: Any = module
    try:
        for part in path:
            found = getattr(found, part)
        getattr(found, last)  # a torch config module raises AttributeError for a name it does not know, as any module
    except AttributeError:
        missing(name)
        return None
    return found, last


def missing(name: str) -> None:
    """Say, once in the job (rank 0) and once per feature, that SEAMS[name] is not in this torch."""
    seam = SEAMS[name]
    if seam.feature in _said:
        return
    _said.add(seam.feature)
    if os.environ.get("RANK", "0") == "0":
        version = getattr(sys.modules.get("torch"), "__version__", "?")
        print(f"accel-launch: note: torch {version} has no {seam.module}.{seam.attribute}: {seam.feature} is off; "
              "the job runs as under torchrun", file=sys.stderr, flush=True)
