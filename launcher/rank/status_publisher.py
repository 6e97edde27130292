"""Each node's ranks, published in the job's store for `accel-launch status` on any node (docs/CONTRACT.md section 9).

On a job of several nodes whose ranks hold the job's secret (the compile cache's, docs/CONTRACT.md section 7), local
rank 0 of each node starts one daemon thread when its program's first `init_process_group` returns (the wrap is set
when torch.distributed.distributed_c10d is imported; nothing is imported or started inside that import). Every
5 s (`summary_seconds`) the thread looks at its node's ranks (the bootstrap's processes its launcher started, found
in /proc) as the status command does (launcher/rank/rank_facts.py) and writes them, signed, under its node's key
(launcher/rank/node_summary.py). A look of 8 ranks costs the thread about 2 ms of CPU; the rank's steps never
wait for it, nor for the store: one client of the store, its calls bounded (STORE_SECONDS), its port knocked on
before each. The first look that fails (the store gone, as a job ends, or not answering) ends the thread, silently
where the port took no connection. At the rank's exit the thread is told to end and a store call under way is
waited for (at most END_SECONDS): a C++ call that returned while the interpreter finalizes would end the rank with
SIGABRT, as a gloo thread's would (launcher/rank/gloo_exit.py). A process the rank forks publishes nothing.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
from types import ModuleType
from typing import Any

from launcher.contract.names import COMPILE_SECRET_VAR, STACKS_DIR_VAR
from launcher.rank.after_import import after_import

__all__ = ["publish_status_at_first_init"]

STORE_SECONDS = 5.0  # for the store's connect, and for each call
END_SECONDS = 1.0


def publish_status_at_first_init() -> None:
    """In local rank 0 of a node of several, with the job's secret and the launcher's folder: publish the node's
    ranks from the first `init_process_group` on. Called before the compile cache takes the secret out of the
    environment."""
    environ = os.environ
    secret, folder = environ.get(COMPILE_SECRET_VAR, ""), environ.get(STACKS_DIR_VAR, "")
    node, port = environ.get("GROUP_RANK", ""), environ.get("MASTER_PORT", "")
    several_nodes = environ.get("WORLD_SIZE") != environ.get("LOCAL_WORLD_SIZE")
    if not (secret and folder and several_nodes and environ.get("LOCAL_RANK") == "0" and node.isdecimal()
            and port.isdecimal() and environ.get("MASTER_ADDR")):
        return
    nodes = environ.get("GROUP_WORLD_SIZE", "")
    publisher = _Publisher(os.fsencode(secret), folder, int(node), int(nodes) if nodes.isdecimal() else 1,
                           (environ["MASTER_ADDR"], int(port)))
    after_import("torch.distributed.distributed_c10d", lambda c10d: _wrap(c10d, publisher))


def _wrap(c10d: ModuleType, publisher: _Publisher) -> None:
    original = c10d.init_process_group

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        publisher.start()
        return result

    c10d.init_process_group = init_process_group


class _Publisher:
    """The node's summary, rewritten every `summary_seconds` by one daemon thread until the store fails."""

    def __init__(self, secret: bytes, folder: str, node: int, nodes: int, address: tuple[str, int]) -> None:
        self._secret, self._folder, self._node, self._nodes = secret, folder, node, nodes
        self._address = address
        self._store: Any | None = None
        self._owner = os.getpid()
        self._started = False
        self._ending = threading.Event()
        self._calling = threading.Lock()  # held while the thread is inside a call to the store

    def start(self) -> None:
        """Once, in the rank itself (a process it forked has the wrap, and starts nothing)."""
        if not self._started and os.getpid() == self._owner:
            self._started = True
            atexit.register(self._end)
            threading.Thread(target=self._run, name="accel-status", daemon=True).start()

    def _end(self) -> None:
        """At the rank's exit: no call from now on, and the one under way (if any) returned."""
        if os.getpid() != self._owner:
            return
        self._ending.set()
        if self._calling.acquire(timeout=END_SECONDS):
            self._calling.release()

    def _run(self) -> None:
        from launcher.contract.hosts import this_host
        from launcher.rank.node_summary import signed_summary, summary_key, summary_seconds
        from launcher.rank.rank_facts import RankLooks

        host = this_host()
        looks, key, pids = RankLooks(self._folder, host), summary_key(self._secret, self._node), _RankPids(self._folder)
        while not self._ending.is_set():
            record = signed_summary(self._secret, self._node, host, looks.take(pids.now()))
            with self._calling:
                if self._ending.is_set() or not self._publish(key, record):
                    return
            self._ending.wait(summary_seconds(self._nodes))

    def _publish(self, key: str, record: bytes) -> bool:
        """One look's record set in the store; False when it was not reached or failed. Its port is knocked on
        first each time: a store that ended (refusing the knock) never sees a call, which torch's client would
        answer with a C++ warning on the rank's stderr."""
        from launcher.rank.node_summary import knock, open_store

        if self._store is None:
            self._store = open_store(*self._address, STORE_SECONDS)
        elif not knock(*self._address, STORE_SECONDS):
            return False
        if self._store is None:
            return False
        try:
            self._store.set(key, record)
            return True
        except RuntimeError:  # torch's DistError and its kinds: the store is ending
            return False


class _RankPids:
    """This node's ranks (global rank -> pid): the launcher's children that run the bootstrap with its folder."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._launcher = os.getppid()
        self._known: dict[int, int | None] = {}  # pid -> its rank; None: not a rank of this job

    def now(self) -> dict[int, int]:
        children = _children(self._launcher) | {os.getpid()}
        self._known = {pid: self._known[pid] if pid in self._known else self._rank_of(pid) for pid in children}
        return {rank: pid for pid, rank in self._known.items() if rank is not None}

    def _rank_of(self, pid: int) -> int | None:
        import psutil

        from launcher.rank.rank_facts import bootstrap_rank

        try:
            found = bootstrap_rank(psutil.Process(pid))
        except psutil.Error:
            return None
        return found[0] if found is not None and found[1] == self._folder else None


def _children(pid: int) -> set[int]:
    """The children of `pid`, as the kernel lists them for each of its threads (one small read each)."""
    found: set[int] = set()
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", encoding="ascii") as handle:
                found.update(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return found
