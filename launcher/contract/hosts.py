"""Hosts as the head and the nodes both know them: a hostfile entry, a selected node, a valid host name."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

__all__ = ["HostSlots", "NodeSpec", "HOST_NAME", "this_host"]

# A host name or IPv4 address. No ':', '@' or ',' (the --include syntax uses them), no leading '-'
# (ssh would read it as an option), no '[' (pdsh would expand it as a host range).
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class HostSlots:
    """One hostfile entry: a host and how many processes (devices) it takes."""

    host: str
    slots: int


@dataclass(frozen=True)
class NodeSpec:
    """A selected node and the device indices its ranks get (`len(slots)` processes)."""

    host: str
    slots: tuple[int, ...]

    @property
    def nproc(self) -> int:
        """How many ranks this node starts."""
        return len(self.slots)


def this_host() -> str:
    """This host as torchrun's failure table and MASTER_ADDR name it (`socket.getfqdn()`): in every line that says
    where a rank is (a failure, a refusal, a stacks report)."""
    return socket.getfqdn()
