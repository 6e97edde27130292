"""Where a node launcher sits relative to the rendezvous endpoint: whether it hosts the store, the address
the other nodes reach it by, and the interface gloo must use to be reached there.

Torch leaves these to guesses from the machine's hostname (`_matches_machine_hostname`, `socket.getfqdn()`,
gloo's hostname lookup), which fail where a compute node's name does not resolve, or resolves to a
loopback address such as Debian's `127.0.1.1`. We say them instead:
- a node the head or Slurm named (`own_host`) hosts the store exactly when the endpoint's host is that
  name, and is reached by that name;
- a node started by hand hosts the store when the endpoint's address belongs to this machine, and is
  reached by the address it uses to reach the endpoint (found by connecting a UDP socket: no packet is
  sent).
Nothing here changes process state; lookups that fail give None, and torch's own guess is used then.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Placement", "place_node", "GLOO_IFNAME_VAR"]

GLOO_IFNAME_VAR = "GLOO_SOCKET_IFNAME"


@dataclass(frozen=True)
class Placement:
    """This node's side of the rendezvous: its address for the others, whether it hosts the store, and the
    environment its ranks need (gloo's interface) to be reached at that address."""

    node_addr: str | None
    hosts_store: bool | None
    rank_env: Mapping[str, str]


def place_node(own_host: str | None, endpoint: str, environ: Mapping[str, str]) -> Placement:
    """The placement of a node launcher of a multi-node job whose rendezvous endpoint is `endpoint`."""
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    if own_host is not None:
        node_addr, hosts_store = own_host, own_host == host
    else:
        node_addr, hosts_store = _address_toward(host, port), _owns(host)
    interface = _interface_of(node_addr) if node_addr and GLOO_IFNAME_VAR not in environ else None
    return Placement(node_addr, hosts_store, {GLOO_IFNAME_VAR: interface} if interface else {})


def _resolve(host: str) -> list[str]:
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except (OSError, UnicodeError):
        return []


def _owns(host: str) -> bool:
    """Whether an address of `host` belongs to this machine (it can be bound here)."""
    for addr in _resolve(host):
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((addr, 0))
                return True
            except OSError:
                continue
    return False


def _address_toward(host: str, port: str) -> str | None:
    """This machine's address on the route to `host` (a connected UDP socket sends nothing)."""
    for addr in _resolve(host):
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((addr, int(port) if port.isdigit() else 9))
                return probe.getsockname()[0]
            except OSError:
                continue
    return None


def _interface_of(node_addr: str) -> str | None:
    """The network interface that carries `node_addr` here, unless that is a loopback address."""
    import psutil  # only multi-node launches need it: keep it off the one-node start-up path

    addrs = set(_resolve(node_addr))
    if not addrs or any(ipaddress.ip_address(addr.split("%")[0]).is_loopback for addr in addrs):
        return None
    for name, entries in psutil.net_if_addrs().items():
        if any(entry.address.split("%")[0] in addrs for entry in entries):
            return name
    return None
