"""On the direct path of several nodes no launcher imports torch, so the ranks make the agreement themselves
(launcher/agreement.py): every rank resolved node 0's compile backend and runs its torch, Python, accelerator kind
and job size, or every rank of every node stops with the one line, before the user's `init_process_group`
returns.

When `torch.distributed.distributed_c10d` has been imported, its `rendezvous` (what `init_process_group` calls
for its store: env://, file://, tcp://) and its `init_process_group` (for a store the program made itself,
`store=`) are wrapped: values set, nothing imported or waited for inside the import (docs/ARCHITECTURE.md).
The agreement runs in the user's first `init_process_group`, on the store it has just reached (within
--rdzv-timeout, or the rank fails at the rendezvous: exit 1), or on the program's own, as rank R of WORLD_SIZE: a few store calls per rank, however many ranks there are. Asked for by the launcher only
(`ACCEL_AGREEMENT_SECONDS`, the wait's bound); a process the rank forks does not take part.
"""

from __future__ import annotations

import functools
import inspect
import os
import platform
import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from types import ModuleType
from typing import Any

from launcher.agreement import AgreementTimeout, ClaimsDiffer, MemberTaken, UntrustedRecord, agree
from launcher.contract.hosts import this_host
from launcher.contract.resolved_backend import BackendClaim, ResolvedBackend
from launcher.contract.names import (ACCELERATOR_VAR, AGREEMENT_VAR, FAILURE_STATUS, LAUNCHER_PID_VAR,
                                     RENDEZVOUS_FAILURE_PHRASE, START_REFUSAL_PHRASE)
from launcher.escaped import short_line
from launcher.rank.after_import import after_import
from launcher.rank.refusal import refuse

__all__ = ["agree_at_first_init"]

_KNOCK_SECONDS = 0.5


def agree_at_first_init() -> None:
    """Where the launcher asks for it, make the agreement at the first `init_process_group` of this process."""
    seconds = os.environ.pop(AGREEMENT_VAR, "")
    if not seconds.isascii() or not seconds.isdigit():
        return
    owner = os.getpid()
    after_import("torch.distributed.distributed_c10d",
                 lambda c10d: _wrap(c10d, owner, timedelta(seconds=int(seconds))))


def _wrap(c10d: ModuleType, owner: int, timeout: timedelta) -> None:
    """Both ways to the first store (torch.distributed re-exports the wrapped `init_process_group`: it imports the
    name once this module's import, and so this hook, is done)."""
    done: list[bool] = []
    _wrap_rendezvous(c10d, owner, timeout, done)
    _wrap_own_store(c10d, owner, timeout, done)


def _wrap_own_store(c10d: ModuleType, owner: int, timeout: timedelta, done: list[bool]) -> None:
    original = c10d.init_process_group
    signature = inspect.signature(original)

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> None:
        given = signature.bind_partial(*args, **kwargs).arguments
        own_store = given.get("store") is not None and int(given.get("world_size", -1)) > 0
        if own_store and not done and os.getpid() == owner:
            done.append(True)
            _agree(given["store"], int(given.get("rank", -1)), int(given.get("world_size", -1)), timeout)
        return original(*args, **kwargs)

    c10d.init_process_group = init_process_group


def _wrap_rendezvous(c10d: ModuleType, owner: int, timeout: timedelta, done: list[bool]) -> None:
    original = c10d.rendezvous

    @functools.wraps(original)
    def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs: Any) -> Iterator[Any]:
        if done or os.getpid() != owner:
            yield from original(url, rank, world_size, **kwargs)
            return
        done.append(True)
        store, its_rank, its_world = _reach(original(url, rank, world_size, **{**kwargs, "timeout": timeout}),
                                            url, timeout)
        _agree(store, its_rank, its_world, timeout)
        yield store, its_rank, its_world

    c10d.rendezvous = rendezvous


def _reach(rendezvous: Iterator[Any], url: str, timeout: timedelta) -> tuple[Any, int, int]:
    """The store, rank and world size of the first rendezvous, reached within --rdzv-timeout (the caller's
    `init_process_group` sets the store's own timeout again once it has it); a rendezvous failure line, exit 1,
    when it is not. For env:// the master's port is first knocked on until the deadline, so that a node 0 that
    never comes is said once, at the deadline, rather than by torch's connect, which retries past it."""
    from torch.distributed import DistError

    deadline = time.monotonic() + timeout.total_seconds()
    try:
        if url.startswith("env://"):
            _knock(os.environ.get("MASTER_ADDR", ""), int(os.environ.get("MASTER_PORT", "0")), deadline)
        return next(rendezvous)
    except (DistError, OSError, ValueError) as exc:
        detail = " ".join(str(exc).split()[:40]) or type(exc).__name__
        refuse(f"{url.split('?')[0]} not reached within --rdzv-timeout {timeout.total_seconds():g} s (is node 0 "
               f"started, at MASTER_ADDR:MASTER_PORT {_master()}?): {short_line(detail)}", RENDEZVOUS_FAILURE_PHRASE,
               FAILURE_STATUS)


def _knock(host: str, port: int, deadline: float) -> None:
    """Return once something accepts a connection at host:port; OSError once `deadline` passed."""
    while True:
        try:
            socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_KNOCK_SECONDS)


def _master() -> str:
    return f"{short_line(os.environ.get('MASTER_ADDR', '?'))}:{short_line(os.environ.get('MASTER_PORT', '?'))}"


def _agree(store: Any, rank: int, world_size: int, timeout: timedelta) -> None:
    """This rank's part of the agreement; a difference stops it with the one line (exit 2), a member that never
    came with a rendezvous failure (exit 1)."""
    import torch

    backend = ResolvedBackend.from_environment(os.environ)
    claim = BackendClaim(backend.name, backend.source, socket.gethostname(), torch=torch.__version__,
                         python=platform.python_version(), accelerator=os.environ.get(ACCELERATOR_VAR, ""),
                         world=str(world_size))
    # A rank holds its number for its node launcher: a second launcher given the same --node-rank is named by it.
    holder = f"{this_host()} (pid {os.environ.get(LAUNCHER_PID_VAR) or os.getpid()})"
    try:
        agree(store, rank, world_size, claim, timeout, member="rank", holder=holder)
    except (ClaimsDiffer, UntrustedRecord) as exc:
        refuse(str(exc), START_REFUSAL_PHRASE)
    except AgreementTimeout as exc:
        refuse(f"{exc} (--rdzv-timeout)", RENDEZVOUS_FAILURE_PHRASE, FAILURE_STATUS)
    except MemberTaken as exc:
        refuse(str(exc.for_node(os.environ.get("GROUP_RANK", "?"))), RENDEZVOUS_FAILURE_PHRASE, FAILURE_STATUS)
