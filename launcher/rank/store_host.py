"""Rank 0 of a direct launch hosts the job's TCPStore, on the socket the launcher bound and listens on.

The launcher hands rank 0 (only) the listening socket, its number in `ACCEL_STORE_FD`. When torch.distributed
is first imported (which `import torch` does), this rank hosts torch's TCPStore on it; every rank's env://
(TORCHELASTIC_USE_AGENT_STORE=True, as under torchrun) then connects as a client, the way torchrun's ranks
reach the agent's store. A script that never imports torch pays nothing. The store lives as long as the rank.

Hosting waits for no one (docs/ARCHITECTURE.md, "Rules the code keeps"). A process the rank forks never hosts:
it gets neither the hook nor the socket. A rank that closed the socket before importing torch (a daemon-style
`closerange`) hosts on the port itself, which the launcher no longer holds.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from types import ModuleType

from launcher.contract.names import START_REFUSAL_PHRASE, STORE_FD_VAR
from launcher.rank.after_import import after_import
from launcher.rank.refusal import refuse

__all__ = ["host_store_when_imported"]

# As long as the store waits for a client's answer: torch's own default for a TCPStore.
_STORE_TIMEOUT = timedelta(seconds=300)
_hosted: list[object] = []  # the store, kept alive for the rank's lifetime


def host_store_when_imported() -> None:
    """In rank 0 of a direct launch: take the listening socket out of the environment (and out of reach of
    the processes the rank starts or forks), and host the store on it once torch.distributed is imported."""
    fd_text = os.environ.pop(STORE_FD_VAR, None)
    if fd_text is None or not fd_text.isascii() or not fd_text.isdigit():
        return  # not a direct launch's rank 0 (the launcher sets no other value)
    fd = int(fd_text)
    if _listening_port(fd) is not None:
        os.set_inheritable(fd, False)
    owner = os.getpid()
    os.register_at_fork(after_in_child=lambda: _forget_in_child(fd))
    after_import("torch.distributed", lambda module: _host(module, fd) if os.getpid() == owner else None)


def _forget_in_child(fd: int) -> None:
    """A forked child keeps no copy of the socket it will never serve (a copy would outlive the rank)."""
    if not _hosted and _listening_port(fd) is not None:
        os.close(fd)


def _host(distributed: ModuleType, fd: int) -> None:
    if not distributed.is_available():
        return
    port = int(os.environ["MASTER_PORT"])
    given = {"master_listen_fd": fd} if _listening_port(fd) == port else {}
    try:
        _hosted.append(distributed.TCPStore(
            os.environ["MASTER_ADDR"], port, int(os.environ["WORLD_SIZE"]), is_master=True,
            timeout=_STORE_TIMEOUT, wait_for_workers=False, multi_tenant=True, **given))
    except RuntimeError as exc:  # the port taken meanwhile, after the rank gave up the launcher's socket
        refuse(f"cannot host the job's store on port {port}: {' '.join(str(exc).split())}", START_REFUSAL_PHRASE)


def _listening_port(fd: int) -> int | None:
    """The port `fd` listens on, or None when it is not a listening TCP socket (closed, or reused for another)."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    try:
        if sock.type != socket.SOCK_STREAM or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            return None
        return int(sock.getsockname()[1])
    except (OSError, IndexError, TypeError, ValueError):
        return None
    finally:
        sock.close()
