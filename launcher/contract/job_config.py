"""The job a launch resolves to (`JobConfig`): built once by `launcher.prepare`, used by the plan, the report
and the run and, as data (JSON), by every node of a hostfile launch.

`RunSettings` (launcher.contract.run_settings) is the part that passes from the command line to the engine
unchanged: it is carried whole, never copied field by field, so a new setting reaches every node without being
remembered anywhere.
"""

from __future__ import annotations

import itertools
import json
import math
import shlex
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path

from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.run_settings import RunSettings
from launcher.errors import UsageError
from launcher.limits import NODES, TOTAL_RANKS, check_count, whole_number

__all__ = ["Program", "RunSettings", "Rendezvous", "JobConfig", "JobDataError", "PROGRAM_MODES", "PROGRAM_PREFIX",
           "rank_runs"]

PROGRAM_MODES = ("script", "module", "exec")
# How each mode is written after the launcher's own options.
PROGRAM_PREFIX = {"script": (), "module": ("-m",), "exec": ("--no-python",)}


class JobDataError(ValueError):
    """JSON that is not a job `JobConfig.to_json` wrote: the message names the field and what it should be."""


@dataclass(frozen=True)
class Program:
    """What each rank runs: a script, a module (`-m`), or any program (`--no-python`)."""

    mode: str
    target: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in PROGRAM_MODES:
            raise ValueError(f"program mode must be one of {PROGRAM_MODES}, got {self.mode!r}")

    def import_folder(self, cwd: Path) -> Path:
        """Where the program's own imports look first, as python's sys.path[0]: the script's folder, else the
        working directory (launcher.rank.bootstrap gives every rank the same)."""
        return (cwd / self.target).parent if self.mode == "script" else cwd

    def describe(self) -> str:
        """The program as a user would type it after the launcher's options."""
        return shlex.join([*PROGRAM_PREFIX[self.mode], self.target, *self.args])


@dataclass(frozen=True)
class Rendezvous:
    """Where this node's launcher meets the others (launcher.run.rendezvous.choice): torch's handler name, the
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
    """Everything a node launcher needs to start its ranks.

    `job_env` is the same on every node (the env file's values, `extra_env`); `backend` reaches every rank as its
    environment form; `node_env` is this node's own (its accelerator, devices, threads, cores, and where it
    sits in the rendezvous).
    """

    program: Program
    backend: ResolvedBackend
    accelerator: str
    nproc_per_node: int
    settings: RunSettings = field(default_factory=RunSettings)
    accelerator_choice: str | None = None  # the name the user gave (flag, env, env file); None: each node detects
    nnodes: str = "1"
    node_rank: int = 0
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    node_addr: str | None = None  # multi-node: this node's address for the others (launcher.multinode.node.addresses)
    hosts_store: bool | None = None  # multi-node: whether this node hosts the rendezvous store (None: torch guesses)
    # Several nodes whose runner or head said each node's rank before it started (a hostfile's head, Slurm, OpenMPI),
    # meeting at the first node's address: the endpoint is node 0's master port, not a rendezvous to learn ranks at.
    node_rank_known: bool = False
    # Each node's rank count, where the launcher knows them all before any node starts (a hostfile's table; Slurm or
    # OpenMPI with a number for --nproc-per-node): in node-rank order, as runs of (nodes, ranks on each), so that the
    # job every node gets stays one pair for a uniform table of any size. Empty: every node runs nproc_per_node.
    rank_counts: tuple[tuple[int, int], ...] = ()
    job_env: dict[str, str] = field(default_factory=dict)
    node_env: dict[str, str] = field(default_factory=dict)
    # Decided once, where the job is placed on a node (launcher.prepare.build_job), never read again from the
    # environment: the rendezvous (None until placed) and why torch elastic's agent starts the ranks (None: the
    # launcher starts them itself, the direct path: launcher.run.direct.path_choice).
    rendezvous: Rendezvous | None = None
    engine_reason: str | None = None

    def __post_init__(self) -> None:
        if self.nproc_per_node < 1:
            raise UsageError("--nproc-per-node", self.nproc_per_node, "must be at least 1")
        if self.node_rank < 0:
            raise UsageError("--node-rank", self.node_rank, "must be 0 or more")
        low, high = _parse_nnodes(self.nnodes)
        if high > 1 and not self.rdzv_endpoint and self.settings.master_port is None:
            raise UsageError("--nnodes", self.nnodes, "more than one node needs --rdzv-endpoint or --master-port")
        if self.node_rank >= high:
            raise UsageError("--node-rank", self.node_rank, f"must be below --nnodes {self.nnodes}")
        check_count(high * self.nproc_per_node, "--nnodes times --nproc-per-node", TOTAL_RANKS)
        runs = self.rank_counts
        if runs and (low != high or any(len(run) != 2 or min(run) < 1 for run in runs)
                     or sum(nodes for nodes, _ in runs) != high):
            raise JobDataError(f"rank_counts {[list(run) for run in runs][:4]} must be runs of (nodes, ranks), 1 or "
                               f"more each, covering the --nnodes {self.nnodes} nodes")
        if runs:
            check_count(self.ranks_before(high), "the ranks of all nodes", TOTAL_RANKS)

    @property
    def node_range(self) -> tuple[int, int]:
        """(min_nodes, max_nodes) from `N` or `MIN:MAX`."""
        return _parse_nnodes(self.nnodes)

    @property
    def world_size(self) -> str:
        """The number of ranks, or a range when the node count is elastic."""
        low, high = self.node_range
        if self.rank_counts:
            return str(self.ranks_before(high))
        if low == high:
            return str(low * self.nproc_per_node)
        return f"{low * self.nproc_per_node}..{high * self.nproc_per_node}"

    def global_rank(self, local_rank: int) -> int:
        """The job's rank of this node's local rank `local_rank` (a fixed node count): the earlier nodes' ranks
        counted first, as torch elastic numbers them."""
        return self.ranks_before(self.node_rank) + local_rank

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

    @property
    def rank_env(self) -> dict[str, str]:
        """What this node's ranks get on top of the launcher's environment."""
        return {**self.job_env, **self.backend.environment(), **self.node_env}

    def to_json(self) -> str:
        """The config as JSON text (`from_json` gives it back equal)."""
        return json.dumps(_data(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> JobConfig:
        """The config `to_json` wrote; raises JobDataError, ValueError (or TypeError) on anything else."""
        return _build(cls, json.loads(text))


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


def _data(value: object) -> object:
    """Dataclasses as dicts of their fields, tuples as lists: plain JSON values."""
    if is_dataclass(value):
        return {item.name: _data(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_data(item) for item in value]
    if isinstance(value, dict):
        return {key: _data(item) for key, item in value.items()}
    return value


def _build(kind: object, data: object, where: str = "the job") -> object:
    """The value of type `kind` that `_data` turned into `data` (dataclasses and tuples rebuilt), every field
    of the type its hint says and every number finite; ValueError naming the field otherwise."""
    if isinstance(kind, type) and is_dataclass(kind):
        if not isinstance(data, dict):
            raise JobDataError(f"{where} must be an object")
        names = [item.name for item in fields(kind)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise JobDataError(f"{where} has no field {unknown[0]!r}")
        hints = typing.get_type_hints(kind)
        return kind(**{name: _build(hints[name], data[name], f"{where}.{name}") for name in names if name in data})
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        return _build(next(arg for arg in args if arg is not type(None)), data, where)
    if origin is tuple:
        return tuple(_build(args[0], item, f"{where}[{index}]") for index, item in enumerate(_of(list, data, where)))
    if origin is dict:
        return {_build(args[0], key, f"{where} key"): _build(args[1], value, f"{where}[{key!r}]")
                for key, value in _of(dict, data, where).items()}
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        data = float(data)
    if kind is float and not math.isfinite(_of(float, data, where)):
        raise JobDataError(f"{where} must be a finite number, got {data}")
    if kind is str and "\0" in _of(str, data, where):
        raise JobDataError(f"{where} holds a NUL character, which no argument, path or variable can")
    return _of(kind, data, where)


def _of(kind: type, data: object, where: str) -> typing.Any:
    """`data` when it is a `kind` (a bool is not an int here); ValueError naming `where` otherwise."""
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        raise JobDataError(f"{where} must be {_JSON_NAMES.get(kind, kind.__name__)}, got {type(data).__name__}")
    return data


_JSON_NAMES = {list: "a list", dict: "an object", str: "text", int: "a whole number", float: "a number",
               bool: "true or false"}
