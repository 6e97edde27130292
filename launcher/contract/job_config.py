"""The job a launch resolves to (`JobConfig`): built once by `launcher.prepare`, used by the plan, the report
and the run and, as data (JSON), by every node of a hostfile launch.

`RunSettings` is the part that passes from the command line to the engine unchanged: it is carried whole,
never copied field by field, so a new setting reaches every node without being remembered anywhere.
"""

from __future__ import annotations

import json
import math
import shlex
import types
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from functools import partial
from pathlib import Path

from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.engine_options import EngineOptions, check_rdzv_backend
from launcher.contract.flag_field import Number, both, check_flags, flag
from launcher.contract.seconds import check_seconds
from launcher.contract.text import check_given, check_host
from launcher.errors import UsageError
from launcher.limits import NODES, TOTAL_RANKS, check_count, whole_number

__all__ = ["Program", "RunSettings", "JobConfig", "JobDataError", "PROGRAM_MODES", "PROGRAM_PREFIX",
           "DEFAULT_GRACE_SECONDS", "MAX_GRACE_SECONDS", "MAX_RESTARTS"]

PROGRAM_MODES = ("script", "module", "exec")
# How each mode is written after the launcher's own options.
PROGRAM_PREFIX = {"script": (), "module": ("-m",), "exec": ("--no-python",)}
DEFAULT_GRACE_SECONDS = 30  # torchrun's shutdown window when neither a flag nor TORCH_ELASTIC_SHUTDOWN_TIMEOUT sets it
MAX_GRACE_SECONDS = 3600
MAX_RESTARTS = 1000


def _port(option: str, port: int) -> None:
    if not 0 < port < 65536:
        raise UsageError(option, port, "must be between 1 and 65535")


def _restarts(option: str, restarts: int) -> None:
    if restarts < 0:
        raise UsageError(option, restarts, "must be 0 or more")
    if restarts > MAX_RESTARTS:
        raise UsageError(option, restarts, f"at most {MAX_RESTARTS}")


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
class RunSettings:
    """The options every node's engine uses as given, each declared on its field (launcher.contract.flag_field)."""

    master_addr: str = flag(*both("master-addr"), default="127.0.0.1", show_default=True, check=check_host,
                            help="Address of the node that hosts the store; a job torchrun runs standalone (one "
                            "node without --master-port or --rdzv-endpoint) gives its ranks this host's name "
                            "instead, as torchrun does.")
    master_port: int | None = flag(*both("master-port"), default=None, number=Number(), check=_port,
                                   help="Port of the store; default: a free port.")
    rdzv_backend: str = flag(*both("rdzv-backend"), default="c10d", show_default=True, metavar="NAME",
                             check=check_rdzv_backend, help="torch elastic rendezvous backend: c10d, static, or a "
                             "handler of torch's torchrun.handlers.")
    rdzv_timeout: int = flag(*both("rdzv-timeout"), default=900, number=Number(minimum=1), show_default=True,
                             check=partial(check_seconds, above_zero=True), help="Seconds to wait for the other nodes.")
    max_restarts: int = flag(*both("max-restarts"), default=0, number=Number(minimum=0), show_default=True,
                             check=_restarts, help="Restarts of the worker group after a failure.")
    grace_period: float = flag(*both("grace-period"), default=float(DEFAULT_GRACE_SECONDS), metavar="SECONDS",
                               number=Number(whole=False, minimum=0),
                               check=partial(check_seconds, limit=MAX_GRACE_SECONDS),
                               help="Seconds ranks get after SIGTERM before SIGKILL (torchrun's --shutdown-timeout). "
                               "Default: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30.")
    timeout: float | None = flag("--timeout", default=None, metavar="SECONDS",
                                 number=Number(whole=False, minimum=0, min_open=True),
                                 check=partial(check_seconds, above_zero=True),
                                 help="Stop the whole job after this many seconds (exit 124).")
    log_dir: str | None = flag(*both("log-dir"), default=None, metavar="DIR", check=check_given,
                               help="Keep every rank's stdout and stderr under DIR.")
    bind_cores: str | None = None  # --bind_core_list / --bind_cores_to_rank ("": all cores); each node splits its own
    verbose: bool = False
    quiet: bool = False  # DeepSpeed's -q / --log_level error: no launch line, only errors
    engine: EngineOptions = field(default_factory=EngineOptions)

    def __post_init__(self) -> None:
        check_flags(self)


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
    job_env: dict[str, str] = field(default_factory=dict)
    node_env: dict[str, str] = field(default_factory=dict)

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

    @property
    def node_range(self) -> tuple[int, int]:
        """(min_nodes, max_nodes) from `N` or `MIN:MAX`."""
        return _parse_nnodes(self.nnodes)

    @property
    def world_size(self) -> str:
        """The number of ranks, or a range when the node count is elastic."""
        low, high = self.node_range
        if low == high:
            return str(low * self.nproc_per_node)
        return f"{low * self.nproc_per_node}..{high * self.nproc_per_node}"

    def global_rank(self, local_rank: int) -> int:
        """The job's rank of this node's local rank `local_rank` (a fixed node count)."""
        return self.node_rank * self.nproc_per_node + local_rank

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
