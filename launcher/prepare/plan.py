"""The resolved plan of a launch as an aligned table: logged before a launch, printed by `--dry-run`."""

from __future__ import annotations

import shlex
import socket
import sys

from launcher.prepare.config import JobConfig
from launcher.run.rank_env import TORCHRUN_VARS

__all__ = ["rank_command", "rendezvous", "plan_rows", "format_plan"]

FREE_PORT = "<free port>"
# torch elastic rendezvous handlers of launcher.run.rendezvous.backend_agreement: the engine's, plus the check
# that every node resolved one compile backend (named here so that planning stays torch-free).
AGREEMENT_PREFIX = "accel-"
DEFAULT_MASTER_PORT = 29500


def rank_command(config: JobConfig) -> list[str]:
    """The argv each rank runs: the bootstrap (`-P`: not found in the user's folder), then the user's program."""
    program = config.program
    return [sys.executable, "-P", "-m", "launcher.rank.bootstrap", program.mode, program.target, *program.args]


def rendezvous(config: JobConfig) -> tuple[str, str, dict[str, object]]:
    """The engine's rendezvous: the given endpoint; else static at master address and port when a port is
    given (or static is asked for); else c10d on port 0 of this one node, which picks a free port itself.

    With more than one node, the backend is our wrapper that also checks every node resolved the same
    compile backend (launcher.run.rendezvous.backend_agreement).
    """
    timeouts: dict[str, object] = {"timeout": config.rdzv_timeout, "join_timeout": config.rdzv_timeout}
    if config.rdzv_endpoint:
        backend, endpoint = config.rdzv_backend, config.rdzv_endpoint
    elif config.master_port is not None or config.rdzv_backend == "static":
        backend, endpoint = "static", f"{config.master_addr}:{config.master_port or DEFAULT_MASTER_PORT}"
    else:
        backend, endpoint = config.rdzv_backend, f"{config.master_addr}:0"
    options = {"rank": config.node_rank, **timeouts} if backend == "static" else timeouts
    if config.node_range[1] > 1:
        backend = AGREEMENT_PREFIX + backend
        options = {**options, "accel_backend": config.backend.name, "accel_backend_source": config.backend.source,
                   "accel_host": socket.gethostname(), **_store_side(config)}
    return backend, endpoint, options


def _store_side(config: JobConfig) -> dict[str, object]:
    """Which node hosts the store and how the others reach this one, where known (torch guesses otherwise)."""
    side: dict[str, object] = {} if config.node_addr is None else {"accel_node_addr": config.node_addr}
    return side if config.hosts_store is None else {**side, "is_host": config.hosts_store}


def plan_rows(config: JobConfig, detected_by: str) -> list[tuple[str, str]]:
    """(label, value) rows: backend and source, accelerator, layout, per-rank environment, command."""
    low, high = config.node_range
    rows = [
        ("compile backend", config.backend.describe()),
        ("accelerator", f"{config.accelerator} ({detected_by})"),
        ("program", config.program.describe()),
        ("nodes", f"{config.nnodes} (this is node {config.node_rank})"),
        ("ranks per node", str(config.nproc_per_node)),
        ("world size", config.world_size if low == high == 1 else f"{config.world_size} if every node runs "
         f"{config.nproc_per_node}"),
        ("rendezvous", _rendezvous_text(config)),
        ("log dir", config.log_dir or "(none: stdout inherited, stderr kept in a private temp dir)"),
    ]
    for name, value in sorted(config.job_env.items()):
        rows.append(("environment", f"{name}={value}"))
    for local_rank in range(config.nproc_per_node):
        rows.append((f"rank env {local_rank}", _rank_env_text(config, local_rank, low == high)))
    rows.append((f"node {config.node_rank} command", shlex.join(rank_command(config))))
    return rows


def format_plan(rows: list[tuple[str, str]]) -> str:
    """Rows as `label : value` lines, labels padded to one width."""
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"  {label.ljust(width)} : {value}" for label, value in rows)


def _rendezvous_text(config: JobConfig) -> str:
    backend, endpoint, _ = rendezvous(config)
    host, _, port = endpoint.rpartition(":")
    engine = backend.removeprefix(AGREEMENT_PREFIX)
    text = f"{engine} at {host}:{FREE_PORT if port == '0' else port}"
    return f"{text} (the nodes check they resolved one compile backend)" if engine != backend else text


def _rank_env_text(config: JobConfig, local_rank: int, fixed_world: bool) -> str:
    port = FREE_PORT if config.master_port is None else str(config.master_port)
    rank = str(config.node_rank * config.nproc_per_node + local_rank) if fixed_world else "<from rendezvous>"
    values = {
        "RANK": rank,
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": config.world_size,
        "LOCAL_WORLD_SIZE": str(config.nproc_per_node),
        "GROUP_RANK": str(config.node_rank),
        "MASTER_ADDR": socket.getfqdn() if config.engine.standalone else config.master_addr,
        "MASTER_PORT": port,
        "ROLE_NAME": config.engine.role,
    }
    return " ".join(f"{name}={values[name]}" for name in (*TORCHRUN_VARS, "ROLE_NAME"))
