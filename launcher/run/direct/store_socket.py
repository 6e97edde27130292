"""The rendezvous socket of a direct launch: bound and listening in the launcher before any rank starts.

Rank 0 hosts torch's TCPStore on it (launcher/rank/store_host.py); the other ranks connect as torch's
env:// does. The launcher listens before any rank exists, so a rank's connect waits in the backlog until
rank 0 accepts it, and two launches on one machine never race for a port (port 0: the kernel picks one).
Like TCPStore's own server, it listens on every address (IPv6 and IPv4 where the host has both).
"""

from __future__ import annotations

import socket

from launcher.contract.job_config import JobConfig
from launcher.errors import PortBusyError

__all__ = ["listen_for_ranks"]

_BACKLOG = 4096  # every rank's connect fits while rank 0 starts (the kernel caps it at somaxconn)


def listen_for_ranks(config: JobConfig) -> socket.socket:
    """A listening socket on the rendezvous port (the kernel's pick when none is given): IPv6 and IPv4 where the
    host has IPv6, else IPv4 alone."""
    port = config.rendezvous.port
    try:
        return _listen(socket.AF_INET6, "::", port)
    except OSError:
        pass
    try:
        return _listen(socket.AF_INET, "0.0.0.0", port)
    except OSError as exc:
        raise PortBusyError(config.settings.master_addr, port, exc.strerror or str(exc)) from None


def _listen(family: socket.AddressFamily, address: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock
