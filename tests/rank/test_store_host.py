"""Rank 0 of a direct launch hosts the job's store on the socket the launcher listens on
(launcher/rank/store_host.py): a client reaches it at MASTER_ADDR:MASTER_PORT, and the socket's number leaves
the rank's environment (and its children's reach)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest

from launcher.contract.names import STORE_FD_VAR
from launcher.rank import store_host
from launcher.rank.store_host import host_store_when_imported


def test_rank_0_hosts_the_store_on_the_launchers_socket_and_hides_its_number(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.distributed import TCPStore

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    monkeypatch.setattr(store_host, "_hosted", [])
    monkeypatch.setenv(STORE_FD_VAR, str(listener.fileno()))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setenv("WORLD_SIZE", "2")
    os.set_inheritable(listener.fileno(), True)

    host_store_when_imported()  # torch.distributed is imported already: it hosts at once
    fd = listener.detach()  # the store owns the socket now
    client = TCPStore("127.0.0.1", port, 2, is_master=False, timeout=timedelta(seconds=30))
    client.set("key", "value")

    assert client.get("key") == b"value"
    assert STORE_FD_VAR not in os.environ
    assert not os.get_inheritable(fd)
    assert len(store_host._hosted) == 1


def test_a_rank_without_the_socket_hosts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_host, "_hosted", [])
    monkeypatch.delenv(STORE_FD_VAR, raising=False)

    host_store_when_imported()

    assert store_host._hosted == []
