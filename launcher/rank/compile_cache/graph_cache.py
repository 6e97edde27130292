"""The cache torch's inductor calls as its remote FX-graph cache (`get` on a local miss, `put` after a compile):
one compile per graph per job. Torch is handed it as its own shape, a `RemoteCacheBackend` whose `_get`/`_put` are
ours (`torch_backend`), so torch's cache statistics count its hits, misses and puts beside its own.

`get` takes the graph's node lock; a rank that waited for it loads the node's copy. Otherwise, across nodes, it
loads the job's copy, or claims the compile, or waits for the rank that claimed it. A rank that returns None
compiles, holding the node's lock and the job's claim until its `put` publishes the graph, or until its compile
ends without one (`compile_ended`: the waiters then compile themselves). Every wait is bounded; a graph that
differs between ranks has another key, and is simply compiled.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from launcher.rank.compile_cache.job_share import JobShare
from launcher.rank.compile_cache.kernels import KernelFiles
from launcher.rank.compile_cache.node_share import NodeShare
from launcher.rank.torch_seams import holder

__all__ = ["GraphCache", "NoSharing", "count", "torch_backend"]

_Body = TypeVar("_Body")


@functools.cache
def torch_backend(body: type[_Body], base: type) -> type[_Body]:
    """`body` (a class of ours with `_get`/`_put` over bytes) as a subclass of torch's `RemoteCacheBackend`, `base`,
    which the hook took from torch's own module (a rank imports nothing of torch itself); made at the first compile.
    Torch's `get`/`put` call ours and count each in its `remote_cache.cache_stats`, as "backend:<body's name>"."""
    return type(body.__name__, (body, base), {"__module__": body.__module__, "__doc__": body.__doc__})


class NoSharing:
    """The backend of a rank whose torch lacks a seam compile once needs: every graph is a miss, nothing is kept."""

    def _get(self, key: str) -> bytes | None:
        """Always a miss: the rank compiles, as under torchrun."""
        return None

    def _put(self, key: str, entry: bytes) -> None:
        """Nothing is kept."""


class GraphCache:
    """One rank's side of compile-once, the body of the backend of torch's `RemoteFxGraphCache` (`torch_backend`)."""

    def __init__(self, node: NodeShare | None, job: Callable[[], JobShare | None], kernels: KernelFiles,
                 wait_seconds: float) -> None:
        super().__init__()  # torch's RemoteCacheBackend names the backend for its statistics
        self._node, self._job, self._kernels = node, job, kernels
        self._wait = wait_seconds
        self._owner = os.getpid()
        self._claimed: set[str] = set()

    def _get(self, key: str) -> bytes | None:
        """The graph's entry as torch stored it, or None: this rank compiles it."""
        if os.getpid() != self._owner:  # a process the rank forked shares nothing of the rank's
            return None
        payload = self._find(key)
        unpacked = _unpacked(payload) if payload is not None else None
        if unpacked is None:
            self._kernels.noting()
            return None
        entry, kernels = unpacked
        self._kernels.place(kernels)
        return entry

    def _put(self, key: str, entry: bytes) -> None:
        """Publish the entry this rank just compiled, with its kernels, then let the waiting ranks load it."""
        if os.getpid() != self._owner:
            return
        payload = _packed(entry, self._kernels.taken())
        if self._node is not None:
            self._node.write(key, payload)
            self._node.unlock(key)
        job = self._job()
        if job is not None:
            job.publish(key, payload)
        self._claimed.discard(key)

    def compile_ended(self) -> None:
        """At the end of each graph's compile: what this rank still holds will not be published."""
        if os.getpid() != self._owner:
            return
        job = self._job() if self._claimed else None
        for key in self._claimed:
            if job is not None:
                job.give_up(key)
        self._claimed.clear()
        if self._node is not None:
            self._node.unlock_all()

    def _find(self, key: str) -> bytes | None:
        node = self._node
        if node is not None and not node.holds(key):
            node.lock(key, self._wait)
            copy = node.read(key)  # left by a rank that held the lock before: now, or before this rank came
            if copy is not None:
                node.unlock(key)
                count("node_copies_loaded")
                return copy
        job = self._job()
        if job is None:
            return None
        copy = job.fetch(key)
        if copy is None:
            claimer = job.claim(key)
            if claimer is None:
                self._claimed.add(key)
                return None
            copy = job.wait_for(key, claimer, self._wait)
        if copy is None:
            return None
        count("job_copies_fetched")
        if node is not None:
            node.write(key, copy)
            node.unlock(key)
        return copy


def count(name: str) -> None:
    """Where a loaded graph or probe library came from, in torch's own counters beside inductor's cache hits
    (`torch._dynamo.utils.counters["accel_launch"]`), where this torch has them; dynamo is loaded: inductor is
    calling."""
    found = holder("counters", sys.modules["torch._dynamo.utils"]) if "torch._dynamo.utils" in sys.modules else None
    if found is not None:
        getattr(*found)["accel_launch"][name] += 1


def _packed(entry: bytes, kernels: dict[str, bytes]) -> bytes:
    return json.dumps({"entry": base64.b64encode(entry).decode("ascii"),
                       "kernels": {name: base64.b64encode(data).decode("ascii") for name, data in kernels.items()}
                       }).encode("ascii")


def _unpacked(payload: bytes) -> tuple[bytes, dict[str, bytes]] | None:
    """The entry and kernels of a payload of ours; None for anything else (then the rank compiles)."""
    try:
        data = json.loads(payload)
        return (base64.b64decode(data["entry"], validate=True),
                {str(name): base64.b64decode(text, validate=True) for name, text in dict(data["kernels"]).items()})
    except (ValueError, TypeError, KeyError):
        return None
