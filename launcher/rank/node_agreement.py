"""On the direct path of several nodes no launcher imports torch, so the ranks make the agreement themselves
(launcher/agreement.py): every rank resolved node 0's compile backend and runs its torch, Python, accelerator kind
and job size, or every rank of every node stops with the one line, before the user's `init_process_group`
returns.

When `torch.distributed.distributed_c10d` has been imported, its `rendezvous` (what `init_process_group` calls
for its store) is wrapped: a value set, nothing imported or waited for inside the import (docs/ARCHITECTURE.md).
The agreement runs in the user's first `init_process_group`, on the store it has just reached, as rank R of
WORLD_SIZE: a few store calls per rank, however many ranks there are. Asked for by the launcher only
(`ACCEL_AGREEMENT_SECONDS`, the wait's bound); a process the rank forks does not take part.
"""

from __future__ import annotations

import functools
import os
import platform
import socket
from collections.abc import Iterator
from datetime import timedelta
from types import ModuleType
from typing import Any

from launcher.agreement import AgreementTimeout, ClaimsDiffer, UntrustedRecord, agree
from launcher.contract.resolved_backend import BackendClaim, ResolvedBackend
from launcher.contract.names import ACCELERATOR_VAR, AGREEMENT_VAR, START_REFUSAL_PHRASE
from launcher.rank.after_import import after_import
from launcher.rank.refusal import refuse

__all__ = ["agree_at_first_init"]


def agree_at_first_init() -> None:
    """Where the launcher asks for it, make the agreement at the first `init_process_group` of this process."""
    seconds = os.environ.pop(AGREEMENT_VAR, "")
    if not seconds.isascii() or not seconds.isdigit():
        return
    owner = os.getpid()
    after_import("torch.distributed.distributed_c10d",
                 lambda c10d: _wrap_rendezvous(c10d, owner, timedelta(seconds=int(seconds))))


def _wrap_rendezvous(c10d: ModuleType, owner: int, timeout: timedelta) -> None:
    original = c10d.rendezvous
    done: list[bool] = []

    @functools.wraps(original)
    def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs: Any) -> Iterator[Any]:
        for store, its_rank, its_world in original(url, rank, world_size, **kwargs):
            if not done and os.getpid() == owner:
                done.append(True)
                _agree(store, its_rank, its_world, timeout)
            yield store, its_rank, its_world

    c10d.rendezvous = rendezvous


def _agree(store: Any, rank: int, world_size: int, timeout: timedelta) -> None:
    """This rank's part of the agreement; a difference stops it with the one line (exit 2)."""
    import torch

    backend = ResolvedBackend.from_environment(os.environ)
    claim = BackendClaim(backend.name, backend.source, socket.gethostname(), torch=torch.__version__,
                         python=platform.python_version(), accelerator=os.environ.get(ACCELERATOR_VAR, ""),
                         world=str(world_size))
    try:
        agree(store, rank, world_size, claim, timeout, member="rank")
    except (ClaimsDiffer, UntrustedRecord, AgreementTimeout) as exc:
        refuse(str(exc), START_REFUSAL_PHRASE)
