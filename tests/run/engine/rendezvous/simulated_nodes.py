"""Many node launchers' backend agreement on one real TCPStore: one thread and one store client per node,
each client counting its calls. Used by the agreement tests and by bench/bench_scale.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from torch.distributed import TCPStore

from launcher.contract.resolved_backend import BackendClaim
from launcher.run.engine.rendezvous.backend_agreement import agree

__all__ = ["CountingStore", "Outcome", "SimulatedNodes", "all_at_once", "claims_with_one_differing"]

_CONNECTING = 256  # clients connected at once: a connect can stall for seconds naming its own address


class CountingStore:
    """A store client that counts its calls (each one round trip to the store); `slow_get` delays reads.
    `leave()` drops the client, and with it the store itself when this client hosts it."""

    def __init__(self, store: TCPStore, slow_get: float = 0.0) -> None:
        self._store, self._slow_get, self.calls = store, slow_get, 0

    def set(self, key: str, value: bytes) -> None:
        self.calls += 1
        self._store.set(key, value)

    def get(self, key: str) -> bytes:
        self.calls += 1
        time.sleep(self._slow_get)
        return self._store.get(key)

    def add(self, key: str, amount: int) -> int:
        self.calls += 1
        return self._store.add(key, amount)

    def compare_set(self, key: str, expected: str, desired: bytes) -> bytes:
        self.calls += 1
        return self._store.compare_set(key, expected, desired)

    def check(self, keys: list[str]) -> bool:
        self.calls += 1
        return self._store.check(keys)

    def wait(self, keys: list[str], timeout: timedelta) -> None:
        self.calls += 1
        self._store.wait(keys, timeout)

    def leave(self) -> None:
        del self._store


@dataclass(frozen=True)
class Outcome:
    """What every node got (None: agreed, else the error's text), its store calls, and the agreement's wall."""

    results: list[str | None]
    calls: list[int]
    seconds: float


def claims_with_one_differing(nodes: int, differing: int | None) -> list[BackendClaim]:
    """`nodes` claims of 'inductor', node `differing` (if any) with 'eager'."""
    return [
        BackendClaim("eager" if rank == differing else "inductor", "--compile-backend", f"host{rank}")
        for rank in range(nodes)
    ]


class SimulatedNodes:
    """`count` store clients of one TCPStore, connected in parallel. With `host`, that node's client hosts
    the store and drops it as soon as it leaves an agreement, and every other node reads `slow_get` seconds
    late; without, the store outlives them all. Several agreements may follow one another on one store."""

    def __init__(self, count: int, host: int | None = None, slow_get: float = 0.0) -> None:
        self._host = host
        self._server = None if host is not None else TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        port = self._server.port if self._server is not None else _free_port()
        hosting = None if host is None else CountingStore(
            TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False))

        def client(rank: int) -> CountingStore:
            if rank == host:
                return hosting
            return CountingStore(TCPStore("127.0.0.1", port, is_master=False), slow_get)

        with ThreadPoolExecutor(min(count, _CONNECTING)) as pool:
            self.stores = list(pool.map(client, range(count)))

    def agree(self, claims: Sequence[BackendClaim], world_size: int | None = None,
              timeout: timedelta = timedelta(seconds=60)) -> Outcome:
        """Node `rank` agrees on `claims[rank]` (of `world_size`, default all), all at once."""
        world_size = world_size or len(claims)
        results: list[str | None] = [None] * len(claims)
        calls_before = [store.calls for store in self.stores]

        def node(rank: int) -> None:
            store = self.stores[rank]
            try:
                agree(store, rank, world_size, claims[rank], timeout)
            except Exception as exc:  # every error is an outcome the caller asserts on
                results[rank] = f"{type(exc).__name__}: {exc}"
            if rank == self._host:
                store.leave()

        seconds = all_at_once(len(claims), node)
        calls = [store.calls - before for store, before in zip(self.stores, calls_before)]
        return Outcome(results, calls[:len(claims)], seconds)


def all_at_once(count: int, work: Callable[[int], None]) -> float:
    """Run `work(0)` ... `work(count - 1)` in threads released together; the seconds until the last ends."""
    start = threading.Barrier(count + 1)

    def released(index: int) -> None:
        start.wait()
        work(index)

    threads = [threading.Thread(target=released, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
