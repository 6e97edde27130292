"""Which failed rank started the teardown: the first to exit, not a peer that failed because of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launcher.exit_order import ExitOrder

__all__ = ["first_failure"]


def first_failure(failures: Mapping[int, Any], order: ExitOrder) -> tuple[int, Any]:
    """(rank, torch's ProcessFailure) of the failure whose process exited first.

    When the exit of every failed process was seen, the exit times decide; otherwise torch's own
    timestamps (whole seconds, from the error file or from when it noticed), the lowest rank on a tie.
    """
    by_pid = {failure.pid: rank for rank, failure in failures.items()}
    if by_pid.keys() <= order.exited.keys():
        rank = by_pid[order.first(by_pid)]
    else:
        rank = min(failures, key=lambda r: (failures[r].timestamp, r))
    return rank, failures[rank]
