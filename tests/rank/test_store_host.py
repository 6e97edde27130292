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
from tests.launches import SCRIPTS, Launcher


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


@pytest.mark.parametrize("value", ["", "abc", "-1", "٣"])
def test_a_value_the_launcher_never_sets_hosts_nothing(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setattr(store_host, "_hosted", [])
    monkeypatch.setenv(STORE_FD_VAR, value)

    host_store_when_imported()

    assert store_host._hosted == [] and STORE_FD_VAR not in os.environ


def test_rank_0_whose_socket_was_closed_hosts_on_the_port_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.distributed import TCPStore

    listener = socket.create_server(("127.0.0.1", 0))
    port, fd = listener.getsockname()[1], listener.fileno()
    listener.close()  # what `os.closerange` in the rank's code does before torch is imported
    monkeypatch.setattr(store_host, "_hosted", [])
    monkeypatch.setenv(STORE_FD_VAR, str(fd))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setenv("WORLD_SIZE", "2")

    host_store_when_imported()
    client = TCPStore("127.0.0.1", port, 2, is_master=False, timeout=timedelta(seconds=30))
    client.set("key", "value")

    assert client.get("key") == b"value" and len(store_host._hosted) == 1


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rank_0_that_closes_its_inherited_descriptors_still_runs_the_job(launch: Launcher) -> None:
    result = launch(["--nproc-per-node", "2", "--timeout", "60", str(SCRIPTS / "close_fds_then_join.py")])
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line.rpartition(":")[2] for line in result.stdout.splitlines() if "sum" in line] == ["sum 2"] * 2
