"""Real engines on loopback: an sshd started by the test with keys it makes, and free ports."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Sshd:
    """A running sshd on 127.0.0.1 and the accel-launch flags that reach it."""

    port: int
    flags: tuple[str, ...]


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    """An sshd for root on loopback, with a host key and a user key made for this test only."""
    if not os.path.exists(SSHD) or os.geteuid() != 0:
        pytest.skip("needs root and Debian's openssh-server (installed by .ci/run)")
    folder = tmp_path / "sshd"
    folder.mkdir()
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PidFile {folder / 'sshd.pid'}\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    daemon = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    flags = ("--ssh-port", str(port), "--ssh-option", f"IdentityFile={folder / 'user_key'}",
             "--ssh-option", f"UserKnownHostsFile={folder / 'known_hosts'}",
             "--ssh-option", "StrictHostKeyChecking=no")
    try:
        yield Sshd(port, flags)
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
