"""The node table: the per-node facts that travel in the environment, so that one command serves every node.

- `ACCEL_NODE_HOSTS=h1,h2`: the selected hosts, in node-rank order (the hostfile's);
- `ACCEL_NODE_DEVICES=0,1,2;0`: each node's device indices, `;` between nodes, in the same order; a
  node starts one rank per index and sets the accelerator's visible-devices variable to exactly them;
- `ACCEL_NODE_RANK=1` (ssh) or `ACCEL_NODE_HOST=h2` (pdsh, from `%h`): which entry this node is.

Over ssh each node has a command of its own, and gets only its own row of the table with
`ACCEL_NODE_COUNT=N` (`node_row_env`): the whole table in each of N commands would make the head's work
grow with N squared, and a 10,000-node table would not fit the 128 KiB one argument may hold.

The head writes the table and each node reads it: both sides of the format live here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from launcher.contract.hosts import HOST_NAME, NodeSpec
from launcher.contract.names import NODE_COUNT_VAR, NODE_DEVICES_VAR, NODE_HOSTS_VAR, NODE_RANK_VAR
from launcher.limits import NODES, RANKS_PER_NODE, CountError, whole_number
from launcher.errors import NodeIdentityError

__all__ = ["node_table_env", "node_row_env", "parse_node_table"]


def node_table_env(nodes: Sequence[NodeSpec]) -> dict[str, str]:
    """The two table variables for `nodes`."""
    return {
        NODE_HOSTS_VAR: ",".join(node.host for node in nodes),
        NODE_DEVICES_VAR: ";".join(",".join(map(str, node.slots)) for node in nodes),
    }


def node_row_env(nodes: Sequence[NodeSpec], rank: int) -> dict[str, str]:
    """What node `rank` of `nodes` needs of the table: its own row, its rank, and how many nodes there are."""
    return {**node_table_env(nodes[rank:rank + 1]), NODE_RANK_VAR: str(rank), NODE_COUNT_VAR: str(len(nodes))}


def parse_node_table(environ: Mapping[str, str]) -> tuple[NodeSpec, ...] | None:
    """The nodes the table variables describe, or None when `ACCEL_NODE_HOSTS` is not set."""
    if NODE_HOSTS_VAR not in environ:
        return None
    hosts_text = environ[NODE_HOSTS_VAR]
    hosts = hosts_text.split(",")
    if len(hosts) > NODES.maximum:
        raise NodeIdentityError(NODE_HOSTS_VAR, f"{len(hosts)} hosts", str(NODES))
    if not all(HOST_NAME.fullmatch(host) for host in hosts):
        raise NodeIdentityError(NODE_HOSTS_VAR, hosts_text, "expected host names joined by ','")
    if NODE_DEVICES_VAR not in environ:
        raise NodeIdentityError(NODE_HOSTS_VAR, hosts_text, f"is set but {NODE_DEVICES_VAR} is not")
    devices_text = environ[NODE_DEVICES_VAR]
    groups = devices_text.split(";")
    if len(groups) != len(hosts):
        expected = f"expected {len(hosts)} device lists joined by ';', one per host in {NODE_HOSTS_VAR}"
        raise NodeIdentityError(NODE_DEVICES_VAR, devices_text, expected)
    return tuple(NodeSpec(host, _devices(group)) for host, group in zip(hosts, groups))


def _devices(group: str) -> tuple[int, ...]:
    """One node's device indices: at most `RANKS_PER_NODE` of them, each below it."""
    indices = group.split(",")
    if len(indices) > RANKS_PER_NODE.maximum:
        raise NodeIdentityError(NODE_DEVICES_VAR, f"{len(indices)} devices on one node", str(RANKS_PER_NODE))
    try:
        return tuple(whole_number(index, NODE_DEVICES_VAR, RANKS_PER_NODE, index=True) for index in indices)
    except CountError as exc:
        expected = f"{exc.expected} (device indices look like '0,1,2;0')"
        raise NodeIdentityError(NODE_DEVICES_VAR, str(exc.value), expected) from None
