"""Where bench_multinode.py runs its node launchers: all on loopback, or on the four namespace hosts of
tests/multinode/hosts/hosts.py (node i on host i mod 4)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from measure import free_port

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: an explicit PYTHONPATH still names the launcher measured

from tests.multinode.hosts.hosts import (  # noqa: E402  (after the path)
    AS_HOST,
    Cluster,
    make_cluster,
    namespaces_possible,
    remove_cluster,
)

__all__ = ["Place", "Loopback", "Hosts", "hosts_possible", "four_hosts"]


class Place:
    """Where each node launcher runs, the address node 0 is reached at, and a port for each job."""

    name: str
    master_addr: str

    def port(self) -> int:
        raise NotImplementedError

    def argv(self, node: int, argv: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def env(self, node: int) -> Mapping[str, str]:
        raise NotImplementedError

    def why_not(self, nodes: int) -> str | None:
        """Why `nodes` node launchers are not run here, or None."""
        return None

    def placement(self, nodes: int) -> str:
        """The placement in words, for the results."""
        raise NotImplementedError

    def node_addr(self, node: int) -> str:
        """Node `node`'s address in a hostfile."""
        raise NotImplementedError

    def head_flags(self) -> list[str]:
        """The flags that let a hostfile launch's head reach every host's sshd."""
        raise NotImplementedError


class Loopback(Place):
    name, master_addr = "loopback", "127.0.0.1"

    def port(self) -> int:
        return free_port()

    def argv(self, node: int, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def env(self, node: int) -> Mapping[str, str]:
        return {}

    def placement(self, nodes: int) -> str:
        return f"{nodes} node launchers on 127.0.0.1"


@dataclass
class Hosts(Place):
    """Node i on host i mod 4 (hosta at 198.18.7.1 hosts node 0). Every process, of every contender, starts as
    on a cluster whose host names resolve: in its host's network and UTS namespaces, in a mount namespace of its
    own that shows a hosts file naming the four hosts as /etc/hosts (as_host.py; torch's c10d handler looks up
    the host's name), with GLOO_SOCKET_IFNAME naming the host's link (as accel-launch sets it itself:
    launcher/node/addresses.py)."""

    cluster: Cluster
    pack: bool
    name: str = "4 hosts"
    interfaces: list[str] = field(default_factory=list)
    hosts_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.master_addr = self.cluster.hosts[0].addr
        self.interfaces = [_interface(host.netns, host.addr) for host in self.cluster.hosts]
        self.hosts_file = self.cluster.folder / "hosts"
        self.hosts_file.write_text("127.0.0.1 localhost\n" + "".join(f"{host.addr} {host.name}\n"
                                                                     for host in self.cluster.hosts))

    def port(self) -> int:
        return self.cluster.next_port()

    def argv(self, node: int, argv: Sequence[str]) -> list[str]:
        host = self.cluster.hosts[node % len(self.cluster.hosts)]
        return host.argv(["unshare", "--mount", "--", sys.executable, str(AS_HOST), host.name, str(self.hosts_file),
                          *argv])

    def env(self, node: int) -> Mapping[str, str]:
        return {"GLOO_SOCKET_IFNAME": self.interfaces[node % len(self.interfaces)]}

    def node_addr(self, node: int) -> str:
        return self.cluster.hosts[node % len(self.cluster.hosts)].addr

    def head_flags(self) -> list[str]:
        return list(self.cluster.ssh_flags)

    def why_not(self, nodes: int) -> str | None:
        if nodes > len(self.cluster.hosts) and not self.pack:
            return f"{nodes} nodes on {len(self.cluster.hosts)} hosts skipped (--hosts-over-4 skip)"
        return None

    def placement(self, nodes: int) -> str:
        count = len(self.cluster.hosts)
        per_host = -(-nodes // count)
        return (f"{nodes} node launchers on {min(nodes, count)} namespace hosts"
                + (f", up to {per_host} per host (node i on host i mod {count})" if per_host > 1 else ", one each"))


def hosts_possible() -> str | None:
    """Why the namespace hosts cannot be made here, or None."""
    return namespaces_possible()


@contextmanager
def four_hosts(folder: Path) -> Iterator[Cluster]:
    """The four namespace hosts, removed on the way out (their namespaces, links and sshds)."""
    cluster = make_cluster(folder)
    try:
        yield cluster
    finally:
        remove_cluster(cluster)


def _interface(netns: str, addr: str) -> str:
    """The name of the link that carries `addr` in namespace `netns`."""
    out = subprocess.run(["ip", "netns", "exec", netns, "ip", "-o", "-4", "addr", "show"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if f" {addr}/" in line:
            return line.split()[1].split("@")[0]
    raise RuntimeError(f"no link carries {addr} in {netns}")
