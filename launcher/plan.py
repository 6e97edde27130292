"""The resolved plan of a launch as an aligned table: logged before a launch, printed by `--dry-run`."""

from __future__ import annotations

import shlex
import sys

from launcher.config import JobConfig
from launcher.rank_env import TORCHRUN_VARS

__all__ = ["rank_command", "plan_rows", "format_plan"]

FREE_PORT = "<free port>"


def rank_command(config: JobConfig) -> list[str]:
    """The argv each rank runs: the bootstrap, then the user's program."""
    program = config.program
    return [sys.executable, "-m", "launcher.bootstrap", program.mode, program.target, *program.args]


def rendezvous_endpoint(config: JobConfig) -> str:
    """Where the node launchers meet: the given endpoint, else master address and port."""
    if config.rdzv_endpoint:
        return config.rdzv_endpoint
    port = FREE_PORT if config.master_port is None else str(config.master_port)
    return f"{config.master_addr}:{port}"


def plan_rows(config: JobConfig, detected_by: str) -> list[tuple[str, str]]:
    """(label, value) rows: backend and source, accelerator, layout, per-rank environment, command."""
    low, high = config.node_range
    rows = [
        ("compile backend", config.backend.describe()),
        ("accelerator", f"{config.accelerator} ({detected_by})"),
        ("program", config.program.describe()),
        ("nodes", f"{config.nnodes} (this is node {config.node_rank})"),
        ("ranks per node", str(config.nproc_per_node)),
        ("world size", config.world_size),
        ("rendezvous", f"{config.rdzv_backend} at {rendezvous_endpoint(config)}"),
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


def _rank_env_text(config: JobConfig, local_rank: int, fixed_world: bool) -> str:
    port = FREE_PORT if config.master_port is None else str(config.master_port)
    rank = str(config.node_rank * config.nproc_per_node + local_rank) if fixed_world else "<from rendezvous>"
    values = {
        "RANK": rank,
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": config.world_size,
        "LOCAL_WORLD_SIZE": str(config.nproc_per_node),
        "GROUP_RANK": str(config.node_rank),
        "MASTER_ADDR": config.master_addr,
        "MASTER_PORT": port,
    }
    return " ".join(f"{name}={values[name]}" for name in TORCHRUN_VARS)
