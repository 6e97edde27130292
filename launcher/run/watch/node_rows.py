"""The other nodes' ranks for `accel-launch status` (docs/CONTRACT.md section 9): read from the job's store, where
each node's local rank 0 writes its node's, signed, every SUMMARY_SECONDS (launcher/rank/status_publisher.py).

Where the store is, which node this is, how many there are and the secret come from one of this node's ranks, as it
started (/proc/PID/environ, as `find_job` reads it). Each call to the store is bounded (STORE_SECONDS; its port is
knocked on first), and all of them together (READ_SECONDS, on a thread of their own: torch's client waits without
end for a store that took the connection and never answers, a process stopped or hung): a store that is gone or
silent costs the command a few seconds at most, and the rows of this node are shown with one line saying why the
others are not.
A record that is not the job's (not signed with its secret for that node's key, too long, or unreadable) is not
shown, and said.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from launcher.contract.names import COMPILE_SECRET_VAR
from launcher.rank.compile_cache.store_calls import quiet_cpp_logs
from launcher.rank.node_summary import open_store, read_summary, store_client, summary_key
from launcher.rank.rank_facts import RankFacts
from launcher.run.stacks.find_job import RunningJob
from launcher.signal_rules import start_thread

__all__ = ["NodeRows", "OtherNodes", "STORE_SECONDS", "READ_SECONDS"]

STORE_SECONDS = 2.0
READ_SECONDS = 5.0


@dataclass(frozen=True)
class NodeRows:
    """What the other nodes' records gave: their ranks, the job's node count, and why some are not shown."""

    facts: list[RankFacts] = field(default_factory=list)
    nodes: int = 1
    shown: int = 1  # this node's included
    missing: str | None = None


class OtherNodes:
    """The job's other nodes, read again at each `read` (one client of the store, made again after a failure)."""

    def __init__(self, job: RunningJob) -> None:
        environ = _rank_environ(job)
        self._nodes = _count(environ.get("GROUP_WORLD_SIZE")) or 1
        if environ.get("WORLD_SIZE") == environ.get("LOCAL_WORLD_SIZE"):
            self._nodes = 1
        self._node = _count(environ.get("GROUP_RANK"))
        self._secret = os.fsencode(environ.get(COMPILE_SECRET_VAR, ""))
        self._address = (environ.get("MASTER_ADDR", ""), _count(environ.get("MASTER_PORT")) or 0)
        self._store: Any | None = None
        self._stuck: threading.Thread | None = None  # a read that never came back

    @property
    def nodes(self) -> int:
        return self._nodes

    def read(self) -> NodeRows:
        """The other nodes' ranks, as last published; nothing to read on a job of one node."""
        if self._nodes == 1:
            return NodeRows()
        if self._node is None or not self._secret:
            return NodeRows([], self._nodes, 1, "the other nodes' rows are not shown: the job's ranks hold no secret "
                                                "to sign them (--compile-cache off or node)")
        if self._stuck is not None and self._stuck.is_alive():
            return self._unreached(f"did not answer within {READ_SECONDS:g} s")
        store_client()  # torch's import, outside the read's bound: it takes seconds

        done: list[NodeRows] = []
        reading = threading.Thread(target=lambda: done.append(self._read_quietly()), name="accel-status-read",
                                   daemon=True)
        start_thread(reading)
        reading.join(READ_SECONDS)
        if done:
            return done[0]
        self._stuck, self._store = reading, None
        return self._unreached(f"did not answer within {READ_SECONDS:g} s")

    def _read_quietly(self) -> NodeRows:
        try:
            with quiet_cpp_logs():
                return self._read()
        except RuntimeError:  # torch's DistError and its kinds: the store failed meanwhile
            self._store = None
            return self._unreached()

    def _read(self) -> NodeRows:
        if self._store is None:
            self._store = open_store(*self._address, STORE_SECONDS)
            if self._store is None:
                return self._unreached()
        deadline = time.monotonic() + READ_SECONDS
        facts: list[RankFacts] = []
        unread: dict[str, list[int]] = {}
        for node in range(self._nodes):
            if node == self._node:
                continue
            key = summary_key(self._secret, node)
            if time.monotonic() > deadline:
                unread.setdefault(f"not read within {READ_SECONDS:g} s", []).append(node)
            elif not self._store.check([key]):
                unread.setdefault("no rows in the job's store yet", []).append(node)
            else:
                found = read_summary(self._secret, node, bytes(self._store.get(key)))
                if found is None:
                    unread.setdefault("its record is not signed with this job's secret", []).append(node)
                facts.extend(found or [])
        missing = "; ".join(f"{_nodes(nodes)}: {why}" for why, nodes in unread.items())
        return NodeRows(facts, self._nodes, self._nodes - sum(map(len, unread.values())),
                        f"not shown: {missing}" if missing else None)

    def _unreached(self, why: str = f"was not reached within {STORE_SECONDS:g} s") -> NodeRows:
        host, port = self._address
        return NodeRows([], self._nodes, 1, f"the other nodes' rows are not shown: the job's store at {host}:{port} "
                                            f"{why}")


def _rank_environ(job: RunningJob) -> dict[str, str]:
    """The environment one of the job's ranks started with (the first that can be read and is a rank's: a process
    still in its exec reads empty)."""
    for _rank, pid in sorted(job.ranks.items()):
        try:
            environ = psutil.Process(pid).environ()
        except psutil.Error:
            continue
        if "WORLD_SIZE" in environ:
            return environ
    return {}


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdecimal() else None


def _nodes(nodes: list[int]) -> str:
    return ("node " if len(nodes) == 1 else "nodes ") + ", ".join(map(str, nodes))
