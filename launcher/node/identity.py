"""Which node this node launcher is, read from the environment the engine that started it set up.

Looked up in this order, the first that is present wins:
1. our own override, set by the ssh and pdsh runners: `ACCEL_NODE_RANK`, or `ACCEL_NODE_HOST` (looked up
   in `ACCEL_NODE_HOSTS`); either needs the node table (`launcher.contract.node_table`), which over ssh
   is this node's own row with `ACCEL_NODE_COUNT`;
2. Slurm (`srun`): `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` / `SLURM_NTASKS`, `SLURM_STEP_NUM_NODES` /
   `SLURM_NNODES`, and `SLURM_STEP_NODELIST` / `SLURM_JOB_NODELIST`, whose first host is the master;
3. OpenMPI (`mpirun`): `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`, `OMPI_COMM_WORLD_LOCAL_RANK`.

Slurm's job and step ids (`SLURM_JOB_ID`, `SLURM_STEP_ID`) and OpenMPI's job id
(`OMPI_MCA_ess_base_jobid`) give the rendezvous id when `--rdzv-id` is not given, so that the nodes of one
job meet (each would draw its own random id otherwise).

Under Slurm the node table entry is found by host name (`SLURMD_NODENAME`) when it is in the table,
because Slurm numbers tasks in its own node order, not necessarily the one given to `--nodelist`; the node's
rank is then its row, the order its head counted every node's ranks in (the direct path numbers ranks by it).
A Slurm host list such as `node[01-03,07],login1` gives its hosts in Slurm's order; they are counted before any
range is expanded, and a list of more than `NODES` hosts is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from launcher.contract.hosts import NodeSpec
from launcher.contract.names import NODE_COUNT_VAR, NODE_HOST_VAR, NODE_HOSTS_VAR, NODE_RANK_VAR
from launcher.contract.node_table import parse_node_table
from launcher.limits import NODES, CountError, whole_number
from launcher.errors import NodeIdentityError

__all__ = ["NodeIdentity", "node_identity", "expand_nodelist"]

# The parts of a Slurm host list: a range of a bracket (`01-03`, `7`), and a host name's text before a bracket.
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
_NAME = re.compile(r"[A-Za-z0-9._-]*")


@dataclass(frozen=True)
class NodeIdentity:
    """This node's place in the job; `node` (its host and devices) is None when no node table came along."""

    node_rank: int
    nnodes: int
    master_addr: str | None
    source: str
    node: NodeSpec | None
    own_name: str | None = None  # Slurm's name for this node (SLURMD_NODENAME), used when no table came along
    job_id: str | None = None  # the engine's id of this job, the same on every node: the default --rdzv-id

    @property
    def host(self) -> str | None:
        """This node's name or address as the other nodes know it, where the engine says it."""
        return self.node.host if self.node is not None else self.own_name


def node_identity(environ: Mapping[str, str]) -> NodeIdentity | None:
    """This node's identity, or None when nothing in `environ` says it."""
    table = parse_node_table(environ)
    if NODE_RANK_VAR in environ or NODE_HOST_VAR in environ:
        return _override(environ, table)
    if "SLURM_PROCID" in environ:
        return _slurm(environ, table)
    if "OMPI_COMM_WORLD_RANK" in environ:
        return _openmpi(environ, table)
    return None


def _override(environ: Mapping[str, str], table: tuple[NodeSpec, ...] | None) -> NodeIdentity:
    variable = NODE_RANK_VAR if NODE_RANK_VAR in environ else NODE_HOST_VAR
    if table is None:
        raise NodeIdentityError(variable, environ[variable], f"needs {NODE_HOSTS_VAR} as well")
    if NODE_COUNT_VAR in environ:
        return _own_row(environ, table)
    hosts = [node.host for node in table]
    if variable == NODE_HOST_VAR:
        if environ[NODE_HOST_VAR] not in hosts:
            raise NodeIdentityError(NODE_HOST_VAR, environ[NODE_HOST_VAR],
                                    f"is not one of the {len(hosts)} hosts of {NODE_HOSTS_VAR}")
        rank = hosts.index(environ[NODE_HOST_VAR])
    else:
        rank = _integer(environ, NODE_RANK_VAR, below=len(table))
    return NodeIdentity(rank, len(table), hosts[0], variable, table[rank])


def _own_row(environ: Mapping[str, str], table: tuple[NodeSpec, ...]) -> NodeIdentity:
    """An ssh node: the table is this node's row only, with its rank and the node count beside it (the
    job it got carries the rendezvous endpoint, so the first node's name is not needed)."""
    if len(table) != 1:
        raise NodeIdentityError(NODE_HOSTS_VAR, ",".join(node.host for node in table[:3]),
                                f"lists {len(table)} hosts, but with {NODE_COUNT_VAR} it holds this node only")
    if NODE_RANK_VAR not in environ:
        raise NodeIdentityError(NODE_COUNT_VAR, environ[NODE_COUNT_VAR], f"needs {NODE_RANK_VAR} as well")
    count = _integer(environ, NODE_COUNT_VAR, minimum=1)
    return NodeIdentity(_integer(environ, NODE_RANK_VAR, below=count), count, None, NODE_RANK_VAR, table[0])


def _slurm(environ: Mapping[str, str], table: tuple[NodeSpec, ...] | None) -> NodeIdentity:
    tasks_var = _first_present(environ, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS") or "SLURM_NTASKS"
    nodes_var = _first_present(environ, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
    ntasks = _integer(environ, tasks_var, minimum=1)
    nnodes = _integer(environ, nodes_var, minimum=1) if nodes_var else ntasks
    if ntasks != nnodes:
        expected = f"needs one accel-launch per node, but {nodes_var}={nnodes} (use srun --ntasks-per-node=1)"
        raise NodeIdentityError(tasks_var, str(ntasks), expected)
    rank = _integer(environ, "SLURM_PROCID", below=ntasks)
    master = None
    list_var = _first_present(environ, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    if list_var:
        try:
            master = expand_nodelist(environ[list_var])[0]
        except ValueError as exc:
            raise NodeIdentityError(list_var, environ[list_var], f"not a Slurm host list: it {exc}") from None
    node = _table_entry(table, rank, ntasks, "SLURM_NTASKS", environ.get("SLURMD_NODENAME"))
    if table is not None and node is not None:
        rank = table.index(node)  # the table's order, which its head numbered the nodes and their ranks by
    job = environ.get("SLURM_JOB_ID")
    job_id = f"slurm-{job}.{environ.get('SLURM_STEP_ID', '')}" if job else None
    return NodeIdentity(rank, ntasks, master, "Slurm", node, environ.get("SLURMD_NODENAME"), job_id)


def _openmpi(environ: Mapping[str, str], table: tuple[NodeSpec, ...] | None) -> NodeIdentity:
    size = _integer(environ, "OMPI_COMM_WORLD_SIZE", minimum=1)
    rank = _integer(environ, "OMPI_COMM_WORLD_RANK", below=size)
    if "OMPI_COMM_WORLD_LOCAL_RANK" in environ and _integer(environ, "OMPI_COMM_WORLD_LOCAL_RANK") != 0:
        expected = "must be 0: start one accel-launch per host (mpirun --map-by ppr:1:node)"
        raise NodeIdentityError("OMPI_COMM_WORLD_LOCAL_RANK", environ["OMPI_COMM_WORLD_LOCAL_RANK"], expected)
    node = _table_entry(table, rank, size, "OMPI_COMM_WORLD_SIZE", None)
    job = environ.get("OMPI_MCA_ess_base_jobid")
    return NodeIdentity(rank, size, table[0].host if table else None, "OpenMPI", node,
                        job_id=f"openmpi-{job}" if job else None)


def _table_entry(
    table: tuple[NodeSpec, ...] | None, rank: int, size: int, size_var: str, host: str | None
) -> NodeSpec | None:
    """This node's table entry: by host name when the engine gave one that is listed, else by rank."""
    if table is None:
        return None
    if len(table) != size:
        hosts = ",".join(node.host for node in table)
        raise NodeIdentityError(NODE_HOSTS_VAR, hosts, f"lists {len(table)} hosts, but {size_var}={size}")
    return next((node for node in table if node.host == host), table[rank])


def _first_present(environ: Mapping[str, str], *names: str) -> str:
    return next((name for name in names if name in environ), "")


def _integer(environ: Mapping[str, str], name: str, minimum: int = 0, below: int | None = None) -> int:
    """A node count or rank from the engine's variable `name`: a whole number, bounded by `NODES`."""
    value = environ.get(name, "")
    try:
        number = whole_number(value, name, NODES, minimum)
    except CountError as exc:
        raise NodeIdentityError(name, value, exc.expected) from None
    if below is not None and number >= below:
        raise NodeIdentityError(name, value, f"expected an integer below {below}")
    return number


def expand_nodelist(text: str) -> tuple[str, ...]:
    """The hosts of `text`; ValueError (with the reason) when it is not a host list."""
    items = list(_split_top_level(text))
    if sum(_count(item) for item in items) > NODES.maximum:
        raise ValueError(f"names more than {NODES.maximum} hosts, the most a job may have")
    hosts = tuple(host for item in items for host in _expand(item))
    if not hosts:
        raise ValueError("names no hosts")
    return hosts


def _split_top_level(text: str) -> Iterator[str]:
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError("has a '[' inside brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("has a ']' without its '['")
        elif char == "," and depth == 0:
            yield text[start:index]
            start = index + 1
    if depth:
        raise ValueError("has a '[' without its ']'")
    yield text[start:]


def _count(item: str) -> int:
    """How many hosts `_expand(item)` gives (capped just past the limit), without expanding anything."""
    head, bracket, rest = _head(item)
    if not bracket:
        return 1
    body, _, tail = rest.partition("]")
    count = sum(high - low + 1 for low, high, _ in _ranges(body)) * (_count(tail) if tail else 1)
    return min(count, NODES.maximum + 1)


def _head(item: str) -> tuple[str, str, str]:
    if not item:
        raise ValueError("has an empty host name")
    head, bracket, rest = item.partition("[")
    if not _NAME.fullmatch(head):
        raise ValueError(f"has a bad host name {head!r}")
    return head, bracket, rest


def _expand(item: str) -> list[str]:
    """One comma-free item, every `[...]` group expanded in turn (several groups multiply)."""
    head, bracket, rest = _head(item)
    if not bracket:
        return [head]
    body, _, tail = rest.partition("]")
    suffixes = _expand(tail) if tail else [""]
    return [head + number + suffix for number in _numbers(body) for suffix in suffixes]


def _numbers(body: str) -> Iterator[str]:
    for low, high, width in _ranges(body):
        yield from (str(number).zfill(width) for number in range(low, high + 1))


def _ranges(body: str) -> Iterator[tuple[int, int, int]]:
    """(low, high, digits of low) for each `7` or `01-03` of a bracket's body."""
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"has a bad range {part[:40]!r} (expected like 01-03 or 7)")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise ValueError(f"has a range {part!r} that runs backwards")
        yield low, high, len(match.group(1))
