"""Rank 0 of a direct launch hosts the job's TCPStore, on the socket the launcher bound and listens on.

The launcher hands rank 0 (only) the listening socket, its number in `ACCEL_STORE_FD`. When torch.distributed
is first imported (which `import torch` does), this rank hosts torch's TCPStore on it; every rank's env://
(TORCHELASTIC_USE_AGENT_STORE=True, as under torchrun) then connects as a client, the way torchrun's ranks
reach the agent's store. A script that never imports torch pays nothing. The store lives as long as the rank.
"""

from __future__ import annotations

import os
from datetime import timedelta
from types import ModuleType

from launcher.contract.names import STORE_FD_VAR
from launcher.rank.after_import import after_import

__all__ = ["host_store_when_imported"]

# As long as the store waits for a client's answer: torch's own default for a TCPStore.
_STORE_TIMEOUT = timedelta(seconds=300)
_hosted: list[object] = []  # the store, kept alive for the rank's lifetime


def host_store_when_imported() -> None:
    """In rank 0 of a direct launch: take the listening socket out of the environment (and out of reach of
    the processes the rank starts), and host the store on it once torch.distributed is imported."""
    fd_text = os.environ.pop(STORE_FD_VAR, None)
    if fd_text is None:
        return
    fd = int(fd_text)
    os.set_inheritable(fd, False)
    after_import("torch.distributed", lambda module: _host(module, fd))


def _host(distributed: ModuleType, fd: int) -> None:
    if not distributed.is_available():
        return
    _hosted.append(distributed.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["WORLD_SIZE"]), is_master=True,
        timeout=_STORE_TIMEOUT, wait_for_workers=False, multi_tenant=True, master_listen_fd=fd))
