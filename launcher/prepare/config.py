"""One frozen description of a launch, validated when it is made (the torch LaunchConfig pattern)."""

from __future__ import annotations

from dataclasses import dataclass, field

from launcher.prepare.engine_options import EngineOptions
from launcher.errors import UsageError
from launcher.resolve.backend import ResolvedBackend

__all__ = ["Program", "JobConfig", "PROGRAM_MODES"]

PROGRAM_MODES = ("script", "module", "exec")


@dataclass(frozen=True)
class Program:
    """What each rank runs: a script, a module (`-m`), or any program (`--no-python`)."""

    mode: str
    target: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in PROGRAM_MODES:
            raise ValueError(f"program mode must be one of {PROGRAM_MODES}, got {self.mode!r}")

    def describe(self) -> str:
        """The program as a user would type it after the launcher's options."""
        import shlex

        prefix = {"script": [], "module": ["-m"], "exec": ["--no-python"]}[self.mode]
        return shlex.join([*prefix, self.target, *self.args])


@dataclass(frozen=True)
class JobConfig:
    """Everything a node launcher needs to start its ranks."""

    program: Program
    backend: ResolvedBackend
    accelerator: str
    nproc_per_node: int
    nnodes: str = "1"
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    rdzv_backend: str = "c10d"
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    rdzv_timeout: int = 900
    max_restarts: int = 0
    grace_period: float = 5.0
    timeout: float | None = None
    log_dir: str | None = None
    engine: EngineOptions = field(default_factory=EngineOptions)
    node_addr: str | None = None  # multi-node: this node's address for the others (launcher.multinode.node.addresses)
    hosts_store: bool | None = None  # multi-node: whether this node hosts the rendezvous store (None: torch guesses)
    job_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.nproc_per_node < 1:
            raise UsageError("--nproc-per-node", self.nproc_per_node, "must be at least 1")
        if self.node_rank < 0:
            raise UsageError("--node-rank", self.node_rank, "must be 0 or more")
        if self.master_port is not None and not 0 < self.master_port < 65536:
            raise UsageError("--master-port", self.master_port, "must be between 1 and 65535")
        if self.grace_period < 0:
            raise UsageError("--grace-period", self.grace_period, "must be 0 or more seconds")
        if self.timeout is not None and self.timeout <= 0:
            raise UsageError("--timeout", self.timeout, "must be more than 0 seconds")
        if self.max_restarts < 0:
            raise UsageError("--max-restarts", self.max_restarts, "must be 0 or more")
        low, high = _parse_nnodes(self.nnodes)
        if high > 1 and not self.rdzv_endpoint and self.master_port is None:
            raise UsageError("--nnodes", self.nnodes, "more than one node needs --rdzv-endpoint or --master-port")
        if self.node_rank >= high:
            raise UsageError("--node-rank", self.node_rank, f"must be below --nnodes {self.nnodes}")

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


def _parse_nnodes(value: str) -> tuple[int, int]:
    low_text, _, high_text = value.partition(":")
    try:
        low, high = int(low_text), int(high_text or low_text)
    except ValueError:
        raise UsageError("--nnodes", value, "expected N or MIN:MAX with whole numbers") from None
    if low < 1 or high < low:
        raise UsageError("--nnodes", value, "expected 1 <= MIN <= MAX")
    return low, high
