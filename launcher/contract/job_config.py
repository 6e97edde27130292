"""The job in its two phases, as types: `JobConfig`, what the head decides and every node receives (frozen, JSON;
built once by launcher.job), and `NodePlan`, this node's part of it, derived once where the job is placed on the
node (launcher.node.node_plan): its accelerator, node rank, rank count, rendezvous, launch path, run id, master
address, each rank's streams and the environment every rank starts from. The run reads the plan and no environment.

`RunSettings` (launcher.contract.run_settings) is the part that passes from the command line to the engine
unchanged: it is carried whole, never copied field by field, so a new setting reaches every node without being
remembered anywhere.

The job's other forms stand beside their users: the program and the command each rank runs
(launcher.contract.program), the job as JSON (launcher.contract.job_json), each rank's line prefixes
(launcher.run.group.rank_logs).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from launcher.contract.program import Program
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.run_settings import RunSettings
from launcher.errors import UsageError
from launcher.limits import NODES, TOTAL_RANKS, check_count, whole_number

__all__ = ["RunSettings", "Rendezvous", "JobConfig", "NodePlan", "RankPlace", "JobDataError", "rank_runs",
           "AGREEMENT_PREFIX", "ONE_NODE_BACKEND", "AGREEING", "STDOUT", "STDERR"]

# Rendezvous handlers of ours (launcher/run/engine/rendezvous/): torch's own with the nodes' backend agreement
# (`accel-c10d`, `accel-static`), and a lone node's own store (`one-node`). AGREEING: torch's handlers that ours
# wrap; any other (etcd, a torchrun.handlers plugin) is used as torchrun uses it.
AGREEMENT_PREFIX = "accel-"
ONE_NODE_BACKEND = "one-node"
AGREEING = ("c10d", "static")
# The streams as torch's `Std` numbers them (and as `NodePlan.streams` holds them, or-ed).
STDOUT, STDERR = 1, 2


class JobDataError(ValueError):
    """JSON that is not a job `job_to_json` wrote (launcher.contract.job_json): the message names the field and what
    it should be."""


@dataclass(frozen=True)
class Rendezvous:
    """Where this node's launcher meets the others (launcher.node.rendezvous_choice): torch's handler name, the
    endpoint `host:port` (port 0: a free one), and the handler's options (JSON values)."""

    backend: str
    endpoint: str
    options: dict[str, object] = field(default_factory=dict)

    @property
    def port(self) -> int:
        """The endpoint's port."""
        return int(self.endpoint.rpartition(":")[2])


@dataclass(frozen=True)
class JobConfig:
    """The job the head decides: the same on every node, and what a hostfile launch's head sends each node.

    `job_env` is the same on every node (the env file's values, `extra_env`); `backend` reaches every rank as its
    environment form. What differs from node to node is in the node's plan (`NodePlan`).
    """

    program: Program
    backend: ResolvedBackend
    nproc_per_node: int  # each node's rank count, unless `rank_counts` says
    settings: RunSettings = field(default_factory=RunSettings)
    accelerator_choice: str | None = None  # the name the user gave (flag, env, env file); None: each node detects
    nnodes: str = "1"
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    # Several nodes whose runner or head said each node's rank before it started (a hostfile's head, Slurm, OpenMPI),
    # meeting at the first node's address: the endpoint is node 0's master port, not a rendezvous to learn ranks at.
    node_rank_known: bool = False
    # Each node's rank count, where the launcher knows them all before any node starts (a hostfile's table; Slurm or
    # OpenMPI with a number for --nproc-per-node): in node-rank order, as runs of (nodes, ranks on each), so that the
    # job every node gets stays one pair for a uniform table of any size. Empty: every node runs nproc_per_node.
    rank_counts: tuple[tuple[int, int], ...] = ()
    job_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.nproc_per_node < 1:
            raise UsageError("--nproc-per-node", self.nproc_per_node, "must be at least 1")
        low, high = _parse_nnodes(self.nnodes)
        if high > 1 and not self.rdzv_endpoint and self.settings.master_port is None:
            raise UsageError("--nnodes", self.nnodes, "more than one node needs --rdzv-endpoint or --master-port")
        check_count(high * self.nproc_per_node, "--nnodes times --nproc-per-node", TOTAL_RANKS)
        runs = self.rank_counts
        if runs and (low != high or any(len(run) != 2 or min(run) < 1 for run in runs)
                     or sum(nodes for nodes, _ in runs) != high):
            raise JobDataError(f"rank_counts {[list(run) for run in runs][:4]} must be runs of (nodes, ranks), 1 or "
                               f"more each, covering the --nnodes {self.nnodes} nodes")
        if runs:
            check_count(self.ranks_before(high), "the ranks of all nodes", TOTAL_RANKS)

    def check_node_rank(self, node_rank: int) -> None:
        """UsageError unless `node_rank` is the rank of one of the job's nodes."""
        if node_rank < 0:
            raise UsageError("--node-rank", node_rank, "must be 0 or more")
        if node_rank >= self.node_range[1]:
            raise UsageError("--node-rank", node_rank, f"must be below --nnodes {self.nnodes}")

    @property
    def node_range(self) -> tuple[int, int]:
        """(min_nodes, max_nodes) from `N` or `MIN:MAX`."""
        return _parse_nnodes(self.nnodes)

    def rank_env(self, node_env: Mapping[str, str]) -> dict[str, str]:
        """What a node's ranks get on top of the launcher's environment, `node_env` being the node's own."""
        return {**self.job_env, **self.backend.environment(), **node_env}

    def ranks_before(self, node_rank: int) -> int:
        """How many ranks the nodes below `node_rank` run (every node nproc_per_node unless `rank_counts` says)."""
        if not self.rank_counts:
            return node_rank * self.nproc_per_node
        total, left = 0, node_rank
        for nodes, ranks in self.rank_counts:
            total, left = total + min(nodes, left) * ranks, max(left - nodes, 0)
        return total

    def ranks_on(self, node_rank: int) -> int | None:
        """The rank count of node `node_rank` as `rank_counts` says it; None when they are not known."""
        return self.ranks_before(node_rank + 1) - self.ranks_before(node_rank) if self.rank_counts else None

@dataclass(frozen=True)
class RankPlace:
    """Where one rank stands in the job: what torch elastic tells a worker."""

    local_rank: int
    rank: int
    role: str
    role_rank: int
    group_rank: int
    local_world_size: int
    world_size: int
    group_world_size: int
    role_world_size: int
    master: tuple[str, int]
    run_id: str
    restart_count: int = 0
    max_restarts: int = 0
    use_agent_store: bool = True
    virtual_local_rank: bool = False
    visible_devices_env: str | None = None  # the job's accelerator's (accelerators/)


@dataclass(frozen=True)
class NodePlan:
    """This node's part of `job`, derived once where the job is placed on the node; `environ` is read-only."""

    job: JobConfig
    accelerator: str  # this node's
    node_rank: int
    local_world_size: int  # this node's rank count
    node_env: dict[str, str]  # this node's own: its accelerator, devices, threads, cores, its side of the rendezvous
    rendezvous: Rendezvous
    engine_reason: str | None  # why torch elastic's agent starts the ranks; None: the launcher itself (direct)
    run_id: str  # --rdzv-id, else a fresh uuid where torchrun runs standalone, else `none`
    # MASTER_ADDR where the ranks meet at a known address, as torchrun gives it (launcher/node/rendezvous_choice.py):
    # the direct path's; on the engine path torch's rendezvous names the master
    master_addr: str
    standalone: bool  # torchrun would run the job as --standalone
    streams: tuple[tuple[int, int], ...]  # each local rank's (redirected, teed) streams, 1 stdout and 2 stderr
    tee_asked: tuple[int, ...]  # each local rank's streams the user teed (--tee): they keep torch's header
    prefix_template: str | None  # torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, when set
    visible_devices_env: str | None  # the variable that lists the accelerator's visible devices
    environ: Mapping[str, str]  # what every rank starts from: the launcher's, the job's, the node's, torch's

    def __post_init__(self) -> None:
        self.job.check_node_rank(self.node_rank)

    @property
    def world_size(self) -> str:
        """The number of ranks, or a range when the node count is elastic."""
        low, high = self.job.node_range
        if self.job.rank_counts:
            return str(self.job.ranks_before(high))
        if low == high:
            return str(low * self.local_world_size)
        return f"{low * self.local_world_size}..{high * self.local_world_size}"

    def rank_place(self, local_rank: int, master: tuple[str, int]) -> RankPlace:
        """Where local rank `local_rank` stands in a fixed job without restarts, meeting at `master`, as torchrun's
        static form places it (the direct path; torch's rendezvous places the engine path's ranks)."""
        engine = self.job.settings.engine
        world = int(self.world_size)  # each node's rank count where they differ (a hostfile's table)
        rank = self.global_rank(local_rank)
        return RankPlace(local_rank=local_rank, rank=rank, role=engine.role, role_rank=rank,
                         group_rank=self.node_rank, local_world_size=self.local_world_size, world_size=world,
                         group_world_size=self.job.node_range[0], role_world_size=world, master=master,
                         run_id=self.run_id, virtual_local_rank=engine.virtual_local_rank,
                         visible_devices_env=self.visible_devices_env)

    def global_rank(self, local_rank: int) -> int:
        """The job's rank of this node's local rank `local_rank` (a fixed node count): the earlier nodes' ranks
        counted first, as torch elastic numbers them."""
        before = self.job.ranks_before(self.node_rank) if self.job.rank_counts else self.node_rank * \
            self.local_world_size
        return before + local_rank

    @property
    def rank_env(self) -> dict[str, str]:
        """What this node's ranks get on top of the launcher's environment."""
        return self.job.rank_env(self.node_env)


def rank_runs(counts: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Rank counts in node order as `JobConfig.rank_counts` holds them: runs of (nodes, ranks on each)."""
    return tuple((len(list(group)), ranks) for ranks, group in itertools.groupby(counts))


def _parse_nnodes(value: str) -> tuple[int, int]:
    low_text, _, high_text = value.partition(":")
    texts = (low_text, high_text or low_text)
    if not all(text.isascii() and text.isdigit() for text in texts):
        raise UsageError("--nnodes", value, "expected N or MIN:MAX with whole numbers (digits 0-9)")
    low, high = (whole_number(text, "--nnodes", NODES) for text in texts)
    if low < 1 or high < low:
        raise UsageError("--nnodes", value, "expected 1 <= MIN <= MAX")
    return low, high
