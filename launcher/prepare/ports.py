"""Checking that a port the user named is free before a rank depends on it."""

from __future__ import annotations

import socket

from launcher.errors import PortBusyError

__all__ = ["ensure_port_free"]


def ensure_port_free(host: str, port: int) -> None:
    """Raise PortBusyError naming host and port when nothing can listen on it here."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as exc:
            raise PortBusyError(host, port, exc.strerror or str(exc)) from None
