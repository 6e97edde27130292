"""A node's ranks in the job's store, for `accel-launch status` on any node (docs/CONTRACT.md section 9): one
record per node (`summary_key`), written every SUMMARY_SECONDS (`summary_seconds`: less often on a job of over 100
nodes) by the node's local rank 0 (launcher/rank/status_publisher.py) and read by the status command of every
other node.

Whoever reaches the store's port can plant keys: a record is read only when its HMAC-SHA256 under the job's secret
(the compile cache's, docs/CONTRACT.md section 7) checks, over its store key and its content, and only up to
MAX_SUMMARY_BYTES; what it holds is checked field by field, and a host is shown escaped. The store is reached
within a bound (`open_store`): its port is knocked on first, so that a store that is gone costs no C++ client's
retries, and every call is given `seconds`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import socket
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from launcher.rank.compile_cache.job_share import signed, verified
from launcher.rank.progress import RECORD_BYTES
from launcher.rank.rank_facts import RankFacts

__all__ = ["summary_key", "signed_summary", "read_summary", "open_store", "knock", "store_client", "summary_seconds",
           "SUMMARY_SECONDS", "MOST_RECORDS_A_SECOND", "MAX_SUMMARY_BYTES"]

SUMMARY_SECONDS = 5.0
MOST_RECORDS_A_SECOND = 20  # what all the nodes together write into the store, at most
MAX_SUMMARY_BYTES = 1 << 20  # about 400 ranks a node (a rank's record is about 2.2 KB)
_VERSION = 1


def summary_key(secret: bytes, node: int) -> str:
    """Node `node`'s key: named by a hash of the secret (never the secret), as the compile cache's keys are."""
    return f"accel-status/{hashlib.sha256(secret).hexdigest()[:16]}/node/{node}"


def signed_summary(secret: bytes, node: int, host: str, facts: Sequence[RankFacts]) -> bytes:
    """Node `node`'s record of its ranks, signed for its key."""
    ranks = [[fact.rank, fact.pid, fact.taken, base64.b64encode(fact.progress).decode("ascii"), fact.compiling,
              fact.alive, fact.asleep, fact.cpu_percent, fact.memory] for fact in facts]
    body = json.dumps({"version": _VERSION, "host": host, "ranks": ranks}, separators=(",", ":")).encode()
    return signed(secret, summary_key(secret, node), body)


def read_summary(secret: bytes, node: int, record: bytes) -> list[RankFacts] | None:
    """The ranks of node `node`'s record, when the job signed it for that node and it reads; None otherwise."""
    if len(record) > MAX_SUMMARY_BYTES:
        return None
    body = verified(secret, summary_key(secret, node), record)
    if body is None:
        return None
    try:
        summary = json.loads(body)
        if summary["version"] != _VERSION or not isinstance(summary["host"], str):
            return None
        return [_fact(summary["host"], row) for row in summary["ranks"]]
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, binascii.Error):
        return None


def summary_seconds(nodes: int) -> float:
    """How often each of `nodes` nodes writes its record: every SUMMARY_SECONDS, less often beyond 100 nodes, so
    that the store takes at most MOST_RECORDS_A_SECOND records a second."""
    return max(SUMMARY_SECONDS, nodes / MOST_RECORDS_A_SECOND)


def knock(host: str, port: int, seconds: float) -> bool:
    """Whether the store's port takes a connection within `seconds` (a store that is gone refuses it at once)."""
    try:
        socket.create_connection((host, port), timeout=seconds).close()
        return True
    except OSError:
        return False


def open_store(host: str, port: int, seconds: float) -> Any | None:
    """A client of the job's TCPStore, reached and answering within `seconds` a call; None when its port does not
    take a connection within `seconds`, or its store does not answer (torch's connect then tries twice)."""
    if not knock(host, port, seconds):
        return None
    try:
        return store_client()(host, port, is_master=False, timeout=timedelta(seconds=seconds), wait_for_workers=False)
    except RuntimeError:  # torch's DistError and its kinds
        return None


def store_client() -> Any:
    """torch's TCPStore, imported: seconds on a cold start, which a caller with a deadline spends before it."""
    from torch.distributed import TCPStore

    return TCPStore


def _fact(host: str, row: list[Any]) -> RankFacts:
    rank, pid, taken, progress, compiling, alive, asleep, cpu, memory = row
    fields = RankFacts(_integer(rank), _integer(pid), host, _number(taken), base64.b64decode(progress, validate=True),
                       None if compiling is None else _integer(compiling, -1), _flag(alive), _flag(asleep),
                       None if cpu is None else _number(cpu), None if memory is None else _integer(memory))
    if len(fields.progress) > RECORD_BYTES:
        raise ValueError("a progress record longer than a rank writes")
    return fields


def _integer(value: Any, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"not a count: {value!r}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"not true or false: {value!r}")
    return value

