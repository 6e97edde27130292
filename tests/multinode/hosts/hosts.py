"""Real hosts on one machine: each a network namespace (own address on a veth link to a switch, own
loopback), a UTS namespace (own hostname) and an sshd with keys made for this run. The switch is a bridge
in a namespace of its own.

Addresses come from the benchmarking range 198.18.0.0/15 and exist only inside the namespaces made here;
nothing is routed anywhere else. Namespaces are named `accelhost-<pid>-<letter>`, so a later run can sweep
the ones a killed run left behind (their pid is gone) without touching another live run's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

PREFIX = "accelhost-"
SUBNET = "198.18.7"
LETTERS = "abcd"  # four hosts: hosta at 198.18.7.1 ... hostd at .4
AS_HOST = Path(__file__).resolve().parent / "as_host.py"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
_LIFELONG_HELPERS = (": slurmscriptd",)  # children a daemon keeps for its whole life


@dataclass
class Host:
    """One host: its namespace, address and hostname, and the daemons started on it."""

    netns: str
    addr: str
    name: str
    daemons: list[subprocess.Popen] = field(default_factory=list)

    def argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` as run on this host: in its network and UTS namespaces (entered through its sshd)."""
        return ["nsenter", "--target", str(self.daemons[0].pid), "--net", "--uts", "--", *argv]

    def spawn(self, argv: Sequence[str], hosts_file: str = "-", env: dict[str, str] | None = None,
              log: Path | None = None) -> subprocess.Popen:
        """Start a daemon in fresh UTS and mount namespaces of this host (hostname set, /etc/hosts shown)."""
        wrapped = ["nsenter", f"--net=/run/netns/{self.netns}", "unshare", "--uts", "--mount", "--",
                   sys.executable, str(AS_HOST), self.name, hosts_file, *argv]
        output = open(log, "ab") if log is not None else subprocess.DEVNULL
        daemon = subprocess.Popen(wrapped, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                  start_new_session=True, env=env)
        if log is not None:
            output.close()
        self.daemons.append(daemon)
        return daemon

    def pids(self) -> set[int]:
        """Every process in this host's network namespace."""
        out = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True).stdout
        return {int(pid) for pid in out.split()}

    def strays(self) -> list[str]:
        """Command lines of the processes on this host that are not its daemons (what a job left behind)."""
        daemon_pids = {daemon.pid for daemon in self.daemons}
        found = []
        for pid in self.pids() - daemon_pids:
            try:
                process = psutil.Process(pid)
                command = " ".join(process.cmdline())
                if process.ppid() in daemon_pids and command.strip() in _LIFELONG_HELPERS:
                    continue
                found.append(command)
            except psutil.NoSuchProcess:
                pass
        return found


@dataclass
class Cluster:
    """Four hosts joined by a switch, with the ssh key and the accel-launch flags that reach their sshds."""

    hosts: list[Host]
    folder: Path
    switch: str
    _port: int = 29500

    def next_port(self) -> int:
        """A port no earlier launch of this session used (the namespaces are fresh: nothing else listens)."""
        self._port += 1
        return self._port

    @property
    def ssh_flags(self) -> list[str]:
        return ["--ssh-option", f"IdentityFile={self.folder / 'user_key'}", "--ssh-option", "StrictHostKeyChecking=no",
                "--ssh-option", "UserKnownHostsFile=/dev/null", "--ssh-option", "LogLevel=ERROR"]

    @property
    def ssh_args(self) -> str:
        """The same as plain ssh options (for pdsh's and mpirun's own ssh)."""
        return (f"-i {self.folder / 'user_key'} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                "-o LogLevel=ERROR -o BatchMode=yes")

    def wait_quiet(self, seconds: float = 30) -> dict[str, list[str]]:
        """Wait until no host runs anything but its daemons; return what is still running, by hostname."""
        deadline = time.monotonic() + seconds
        while True:
            left = {host.name: host.strays() for host in self.hosts}
            left = {name: strays for name, strays in left.items() if strays}
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)


def namespaces_possible() -> str | None:
    """Why this machine cannot create network namespaces, or None when it can."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return "needs root and iproute2 to create network namespaces"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"this machine cannot create network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


def programs_missing() -> str | None:
    """Which programs the hosts need are not installed, or None."""
    programs = ("unshare", "nsenter", "ssh", "ssh-keygen", SSHD, "pdsh", "mpirun")
    missing = [program for program in programs if shutil.which(program) is None]
    if not missing:
        return None
    return f"needs {', '.join(missing)} (util-linux, openssh, pdsh, openmpi-bin; installed by .ci/run)"


def sweep_stale() -> None:
    """Delete the namespaces (and stop their processes) of earlier runs whose test process is gone."""
    for netns in _our_namespaces():
        pid = netns.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            _remove(netns)


def make_cluster(folder: Path) -> Cluster:
    """Four hosts, hosta at 198.18.7.1 to hostd at .4, each with an sshd on port 22."""
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    hosts = [Host(f"{PREFIX}{os.getpid()}-{letter}", f"{SUBNET}.{index}", f"host{letter}")
             for index, letter in enumerate(LETTERS, start=1)]
    cluster = Cluster(hosts, folder, f"{PREFIX}{os.getpid()}-switch")
    try:
        _link(hosts, cluster.switch, f"ah{os.getpid() % 100000}")
        Path("/run/sshd").mkdir(exist_ok=True)
        for host in hosts:
            host.spawn([SSHD, "-D", "-e", "-f", str(_sshd_config(folder, host))])
        for host in hosts:
            _wait_port(host, 22)
    except BaseException:
        remove_cluster(cluster)
        raise
    return cluster


def remove_cluster(cluster: Cluster) -> None:
    """Stop every process on the hosts and delete their namespaces and the switch's (and with them the links)."""
    for host in cluster.hosts:
        for daemon in host.daemons:
            if daemon.poll() is None:
                daemon.terminate()
        for daemon in host.daemons:
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        _remove(host.netns)
    _remove(cluster.switch)


def _link(hosts: list[Host], switch: str, stem: str) -> None:
    """A namespace per host, loopback up, and a veth pair from each to a bridge in the `switch` namespace."""
    subprocess.run(["ip", "netns", "add", switch], check=True)
    _in_netns(switch, "ip", "link", "add", "br0", "type", "bridge")
    _in_netns(switch, "ip", "link", "set", "br0", "up")
    for host, letter in zip(hosts, LETTERS):
        subprocess.run(["ip", "netns", "add", host.netns], check=True)
        _in(host, "ip", "link", "set", "lo", "up")
        end, port = f"{stem}{letter}", f"{stem}s{letter}"
        subprocess.run(["ip", "link", "add", end, "netns", host.netns, "type", "veth", "peer", "name", port,
                        "netns", switch], check=True)
        _in_netns(switch, "ip", "link", "set", port, "master", "br0", "up")
        _in(host, "ip", "addr", "add", f"{host.addr}/24", "dev", end)
        _in(host, "ip", "link", "set", end, "up")


def _sshd_config(folder: Path, host: Host) -> Path:
    config = folder / f"sshd_config_{host.name}"
    config.write_text(
        f"Port 22\nListenAddress {host.addr}\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PidFile {folder / f'sshd_{host.name}.pid'}\nMaxStartups 100\nMaxSessions 100\n"
    )
    return config


def _wait_port(host: Host, port: int) -> None:
    deadline = time.monotonic() + 15
    probe = [sys.executable, "-c", "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)",
             host.addr, str(port)]
    while subprocess.run(["ip", "netns", "exec", host.netns, *probe], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd on {host.name} ({host.addr}) did not start")
        time.sleep(0.1)


def _in(host: Host, *argv: str) -> None:
    _in_netns(host.netns, *argv)


def _in_netns(netns: str, *argv: str) -> None:
    subprocess.run(["ip", "netns", "exec", netns, *argv], check=True)


def _our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def _remove(netns: str) -> None:
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
    for pid in out.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)
