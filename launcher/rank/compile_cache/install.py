"""Compile once per job, hooked into a rank's torch (docs/CONTRACT.md section 7).

Where the launcher asks for it (`ACCEL_COMPILE_CACHE` job or node, in a job of more than one rank), inductor's
remote FX-graph cache is switched on unless the code or the user set it, and served by this rank's
`GraphCache`, handed to torch as a subclass of torch's own `RemoteCacheBackend`: values set when torch's modules
are imported, nothing imported, made or reached there. The backend class and the cache are made at the first
compile that asks for it; the job's store is reached then (or at inductor's first CPU-feature probe, whose
libraries the job shares too), and only when the job spans nodes. A process the rank forks shares nothing.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from launcher.contract.names import (COMPILE_CACHE_VAR, COMPILE_DIR_VAR, COMPILE_KEY_FILE_VAR, COMPILE_SECRET_VAR,
                                     COMPILE_STORE_VAR, COMPILE_WAIT_SECONDS)
from launcher.rank.after_import import after_import
from launcher.rank.compile_cache.graph_cache import GraphCache, NoSharing, torch_backend
from launcher.rank.compile_cache.job_share import JobShare
from launcher.rank.compile_cache.kept_share import (AutogradEntries, KeptEntries, KeptShare, PgoState, check_same_key,
                                                    open_folder, switch_on_autograd, switch_on_pgo)
from launcher.rank.compile_cache.kernels import KernelFiles
from launcher.rank.compile_cache.node_share import NodeShare, private_folder
from launcher.rank.compile_cache.probes import ProbeLibraries
from launcher.rank.compile_cache.store_calls import connect, quiet_cpp_logs
from launcher.rank.torch_seams import holder

__all__ = ["share_compiles"]


def share_compiles() -> None:
    """Arrange, without importing torch, for this rank's inductor compiles to be shared as the launcher says."""
    mode = os.environ.get(COMPILE_CACHE_VAR, "")
    secret = os.fsencode(os.environ.pop(COMPILE_SECRET_VAR, ""))  # its bytes as given, UTF-8 or not
    folder = os.environ.get(COMPILE_DIR_VAR, "") if mode in ("job", "node") else ""
    may_grow = bool(os.environ.get(COMPILE_STORE_VAR))  # several nodes, or a node joining later, in a later attempt
    if mode not in ("job", "node") or (os.environ.get("WORLD_SIZE", "1") == "1" and not folder and not may_grow):
        return
    several_nodes = os.environ.get("WORLD_SIZE") != os.environ.get("LOCAL_WORLD_SIZE") or may_grow
    several_nodes = several_nodes and mode == "job" and bool(secret)
    sharing = _Sharing(secret if several_nodes else b"", folder)
    after_import("torch._inductor.remote_cache", sharing.serve)
    after_import("torch._inductor.codecache", sharing.watch_kernels)
    after_import("torch._inductor.compile_fx", sharing.watch_compiles)
    if several_nodes or folder:
        after_import("torch._inductor.cpu_vec_isa", sharing.share_probes)


def _switch_on(seam: str, switch: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """`switch` on a torch config module, once its SEAMS entry is there (launcher.rank.torch_seams)."""
    def on(config: ModuleType) -> None:
        if holder(seam, config) is not None:
            switch(config)
    return on


def _switch_on_graphs(config: ModuleType) -> None:
    if config.fx_graph_remote_cache is None:  # None: neither the user's variable nor their code chose
        config.fx_graph_remote_cache = True


class _Sharing:
    """The rank's GraphCache, made at its first use, and the hooks that feed it."""

    def __init__(self, secret: bytes, folder: str) -> None:
        self._secret = secret
        self._folder = folder
        self._kept: KeptShare | None = None
        self._cache: GraphCache | None = None
        self._kernels: KernelFiles | None = None
        self._job: JobShare | None = None
        self._job_tried = False
        self._base: type = object  # torch's RemoteCacheBackend, found when torch's remote_cache module is imported
        self.off = False  # this torch lacks a seam compile once needs (launcher.rank.torch_seams)

    def cache(self) -> GraphCache | NoSharing:
        """The rank's cache (torch calls this as `RemoteFxGraphCache.backend_override_cls`); one that shares nothing
        where this torch lacks one of compile once's seams (the first compile comes after every hook ran)."""
        if self.off:
            return torch_backend(NoSharing, self._base)()
        if self._cache is None:
            import torch._inductor.runtime.cache_dir_utils as cache_dir_utils  # inside a compile: loaded already

            cache_dir = holder("cache_dir", cache_dir_utils)
            if cache_dir is None:
                self.off = True
                return torch_backend(NoSharing, self._base)()
            root = Path(getattr(*cache_dir)())
            folder = private_folder(root / "accel-launch")
            self._kernels = KernelFiles(root)
            self._cache = torch_backend(GraphCache, self._base)(NodeShare(folder) if folder is not None else None,
                                                                self._job_share, self._kernels, COMPILE_WAIT_SECONDS)
        return self._cache

    def kept(self, entries: type[KeptEntries]) -> KeptEntries:
        """A backend of the kept entries (torch calls this as its AOTAutograd and PGO caches' backend_override_cls)."""
        return torch_backend(entries, self._base)(self._job_share)

    def serve(self, remote_cache: ModuleType) -> None:
        """Serve torch's remote caches, each switched on only where this torch lets this rank serve it (a remote
        cache switched on without its backend would reach for torch's own, Redis)."""
        graphs, base = holder("fx_remote_backend", remote_cache), holder("remote_cache_backend", remote_cache)
        if graphs is None or base is None or self.off:
            self.off = True
            return
        self._base = getattr(*base)
        setattr(*graphs, staticmethod(self.cache))
        after_import("torch._inductor.config", _switch_on("fx_remote_switch", _switch_on_graphs))
        if not self._folder:
            return
        for seam, switch_seam, entries, config, switch in (
                ("autograd_remote_backend", "autograd_remote_switch", AutogradEntries, "torch._functorch.config",
                 switch_on_autograd),
                ("pgo_remote_backend", "pgo_remote_switch", PgoState, "torch._dynamo.config", switch_on_pgo)):
            found = holder(seam, remote_cache)
            if found is not None:
                setattr(*found, staticmethod(functools.partial(self.kept, entries)))
                after_import(config, _switch_on(switch_seam, switch))

    def watch_kernels(self, codecache: ModuleType) -> None:
        """Note each C++ library inductor loads, for the graph being compiled (launcher.rank.compile_cache.kernels)."""
        found = holder("load_library", codecache)
        if found is None:
            self.off = True
            return
        original = getattr(*found).__func__

        def load_library(cls: type, path: str, key: str) -> Any:
            if self._kernels is not None:
                self._kernels.loaded(path)
            return original(cls, path, key)

        setattr(*found, classmethod(load_library))

    def watch_compiles(self, compile_fx: ModuleType) -> None:
        """After each graph's compile, release what it did not publish (GraphCache.compile_ended)."""
        found = holder("compile_fx_inner", compile_fx)
        if found is None:
            self.off = True
            return
        original = getattr(*found)

        @functools.wraps(original)
        def compile_fx_inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                if self._cache is not None:
                    self._cache.compile_ended()

        setattr(*found, compile_fx_inner)

    def share_probes(self, cpu_vec_isa: ModuleType) -> None:
        """Build each CPU-feature probe library once per job (launcher.rank.compile_cache.probes), under torch's
        own lock for it; left to torch alone where its private names differ from torch 2.13's."""
        fingerprinted, built = holder("isa_fingerprint", cpu_vec_isa), holder("check_build", cpu_vec_isa)
        if fingerprinted is None or built is None:
            return
        fingerprint, original = getattr(*fingerprinted), getattr(*built)
        probes = ProbeLibraries(self._job_share)
        owner = os.getpid()

        def check_build(isa: Any, code: str) -> bool:
            helpers = _probe_helpers() if os.getpid() == owner else None
            if helpers is None:
                return original(isa, code)
            LOCK_TIMEOUT, get_lock_dir, write, FileLock = helpers  # noqa: N806  (torch's own names)

            name, source = write(code, "cpp", extra=fingerprint(isa.build_arch_flags()))
            library = Path(source).with_suffix(".so")
            with FileLock(os.path.join(get_lock_dir(), name + ".lock"), timeout=LOCK_TIMEOUT):
                claimed = probes.obtain(name, library)
            try:
                return original(isa, code)
            finally:
                if claimed:
                    probes.built(name, library)

        setattr(*built, check_build)

    def _job_share(self) -> KeptShare | JobShare | None:
        """The compile folder in front of the job's copies across nodes (reached once, at the first compile; None on
        one node or unreachable); None with neither."""
        if not self._job_tried:
            self._job_tried = True
            self._job = self._reach_job() if self._secret else None
            self._kept = self._open_folder()
        return self._kept or (self._job if self._job is not None and self._job.working else None)

    def _open_folder(self) -> KeptShare | None:
        if not self._folder:
            return None
        folder, problem = open_folder(self._folder)
        if folder is None:
            if os.environ.get("LOCAL_RANK", "0") == "0":
                print(f"accel-launch: note: the compile folder {problem}: it is not used", file=sys.stderr,
                      flush=True)
            return None
        return KeptShare(folder, self._job)

    def _reach_job(self) -> JobShare | None:
        """The job's copies across nodes, once the job's store was reached (within COMPILE_STORE_SECONDS, said once
        if not: launcher.rank.compile_cache.store_calls) and every node signs with this rank's key. The job's store
        is the rendezvous's where the launcher names it (COMPILE_STORE_VAR: it outlives a restart), else rank 0's."""
        address = os.environ.get(COMPILE_STORE_VAR) or f"{os.environ.get('MASTER_ADDR', '')}:" \
                                                        f"{os.environ.get('MASTER_PORT', '')}"
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            return None
        store = connect(host.strip("[]"), int(port))
        try:
            with quiet_cpp_logs():
                same = store is not None and check_same_key(store, self._secret, os.environ.get(COMPILE_KEY_FILE_VAR))
        except RuntimeError:  # the store failed on its first call: this rank shares within its node
            return None
        if not same:
            return None
        # Claims belong to one round of the job. torch counts attempts per node (a node restarted for another's
        # failure may still say 0), so the round is also told by its master port, fresh each round (node_plan.py).
        attempt = (f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}@{os.environ.get('MASTER_ADDR', '')}:"
                   f"{os.environ.get('MASTER_PORT', '')}")
        return JobShare(store, self._secret, attempt, f"{socket.gethostname()} {os.getpid()}", _alive)


def _probe_helpers() -> tuple[Any, Any, Any, Any] | None:
    """codecache's LOCK_TIMEOUT, get_lock_dir and write, and torch's FileLock (all loaded by now: a probe is built
    inside a compile); None where this torch lacks one (the probes are then left to torch, said once)."""
    codecache, filelock = sys.modules.get("torch._inductor.codecache"), sys.modules.get("torch.utils._filelock")
    if codecache is None or filelock is None:
        return None
    found = [holder(seam, module) for seam, module in (("lock_timeout", codecache), ("lock_dir", codecache),
                                                       ("write_source", codecache), ("file_lock", filelock))]
    return None if None in found else tuple(getattr(*each) for each in found)  # type: ignore[return-value]


def _alive(claimer: str) -> bool:
    """Whether the rank that claimed a compile ("host pid") may still publish it: known only on this host."""
    host, _, pid = claimer.partition(" ")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
