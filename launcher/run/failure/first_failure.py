"""Which failed rank started the teardown: the first to exit, by time, never by what it wrote."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


__all__ = ["first_failure", "lost_a_peer", "lost_peer_note"]

# What a rank writes when it failed because a peer went away (gloo, NCCL, the c10d store).
_PEER_LOST = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|DistNetworkError|"
    r"NCCL communicator was aborted|recvValue?\b.*failed|failed to recv, got 0 bytes",
    re.IGNORECASE,
)

# gloo names the peer it lost: `Connection closed by peer [10.0.0.7]:12345`, `Read error [10.0.0.7]:12345`.
_PEER_ADDRESS = re.compile(r"\[([0-9A-Fa-f.:]+)\]:\d+")


def lost_a_peer(stderr_tail: tuple[str, ...]) -> bool:
    """True when a rank's last lines say it failed because a peer's connection went away."""
    return any(_PEER_LOST.search(line) for line in stderr_tail)


def lost_peer_note(stderr_tail: tuple[str, ...]) -> str | None:
    """For a cause that itself only lost a peer: one line naming the peer's address, when gloo said it."""
    if not lost_a_peer(stderr_tail):
        return None
    lost_lines = [line for line in stderr_tail if _PEER_LOST.search(line)]
    found = next((m.group(1) for line in lost_lines if (m := _PEER_ADDRESS.search(line))), None)
    where = f"its peer at {found}" if found else "a peer"
    return f"it lost {where} first: a rank or a node there went away (lost node, or a failure there)"


def first_failure(failures: Mapping[int, Any], exited: Mapping[int, float]) -> tuple[int, Any]:
    """(rank, failure) of the failure that started the teardown: the first to exit (a failure has the `pid`,
    `exitcode` and `timestamp` of torch's ProcessFailure).

    Failures are ordered by the exit times the launcher saw (`exited`: pid -> monotonic time) when it saw every
    failed rank's exit; else by their timestamps (whole seconds), a rank that ended by itself before one ended
    by a signal (as the teardown ends them) in the same second, then the lowest rank. What a rank wrote never decides it: its
    own "Connection reset by peer" may be its own failure (lost_peer_note says what it lost).
    """
    by_pid = {failure.pid: rank for rank, failure in failures.items()}
    if by_pid.keys() <= exited.keys():
        cause = min(failures, key=lambda r: exited[failures[r].pid])
    else:
        cause = min(failures, key=lambda r: (failures[r].timestamp, failures[r].exitcode < 0, r))
    return cause, failures[cause]
