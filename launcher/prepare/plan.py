"""The resolved plan of a launch as an aligned table: logged before a launch, printed by `--dry-run`."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.contract.names import COMPILE_SECRET_VAR, TORCHRUN_VARS
from launcher.escaped import one_line
from launcher.prepare.rank_defaults import compile_cache_text
from launcher.run.direct.path_choice import path_text
from launcher.run.rank_start import rank_command
from launcher.run.rendezvous.choice import AGREEMENT_PREFIX, ONE_NODE_BACKEND, master_addr

__all__ = ["plan_rows", "format_plan", "ENV_FILE_ROW"]

ENV_FILE_ROW = ".env file"

FREE_PORT = "<free port>"
SECRET = "<secret>"
FROM_RENDEZVOUS = "<from rendezvous>"


def plan_rows(config: JobConfig, detected_by: str, env_file: Path | None = None) -> list[tuple[str, str]]:
    """(label, value) rows: backend and source, accelerator, the env file read, layout, per-rank environment,
    command."""
    low, high = config.node_range
    rows = [
        ("compile backend", config.backend.describe()),
        ("accelerator", f"{config.accelerator} ({detected_by})"),
        (ENV_FILE_ROW, str(env_file) if env_file is not None else "(none)"),
        ("program", config.program.describe()),
        ("nodes", f"{config.nnodes} (this is node {config.node_rank})"),
        ("ranks per node", str(config.nproc_per_node)),
        ("world size", config.world_size if low == high == 1 else f"{config.world_size} if every node runs "
         f"{config.nproc_per_node}"),
        ("rendezvous", _rendezvous_text(config)),
        ("launch path", path_text(config)),
        ("log dir", config.settings.log_dir or "(none: stdout inherited, stderr kept in a private temp dir)"),
        ("compile cache", compile_cache_text(config.rank_env, os.environ, env_file is not None)),
    ]
    for name, value in sorted(config.rank_env.items()):
        rows.append(("environment", f"{name}={SECRET if name == COMPILE_SECRET_VAR else value}"))
    master = _master(config)
    for local_rank in range(config.nproc_per_node):
        rows.append((f"rank env {local_rank}", _rank_env_text(config, local_rank, low == high, master)))
    rows.append((f"node {config.node_rank} command", shlex.join(rank_command(config))))
    return rows


def format_plan(rows: list[tuple[str, str]]) -> str:
    """Rows as `label : value` lines, labels padded to one width, each value one line (launcher.escaped)."""
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"  {label.ljust(width)} : {one_line(value)}" for label, value in rows)


def _rendezvous_text(config: JobConfig) -> str:
    if config.rendezvous is None:
        return "each node's, where it places the job"
    backend, endpoint = config.rendezvous.backend, config.rendezvous.endpoint
    if backend == ONE_NODE_BACKEND:
        return "this node alone: its own store on a free port"
    host, _, port = endpoint.rpartition(":")
    engine = backend.removeprefix(AGREEMENT_PREFIX)
    text = f"{engine} at {host}:{FREE_PORT if port == '0' else port}"
    return f"{text} (the nodes check they resolved one compile backend)" if engine != backend else text


def _master(config: JobConfig) -> tuple[str, str]:
    """MASTER_ADDR and MASTER_PORT as every rank of this node gets them (the same for all of them)."""
    settings = config.settings
    backend = config.rendezvous.backend if config.rendezvous is not None else ""
    if config.node_rank_known and config.engine_reason is None:  # node 0's launcher listens at the endpoint
        return master_addr(config), config.rdzv_endpoint.rpartition(":")[2]
    if config.node_range[1] > 1 and backend != AGREEMENT_PREFIX + "static":
        # Several nodes meeting through c10d: node 0 of the rendezvous tells every rank where it listens.
        return "<node 0's address>", FROM_RENDEZVOUS
    return master_addr(config), FREE_PORT if settings.master_port is None else str(settings.master_port)


def _rank_env_text(config: JobConfig, local_rank: int, fixed_world: bool, master: tuple[str, str]) -> str:
    settings = config.settings
    addr, port = master
    rank = str(config.global_rank(local_rank)) if fixed_world else FROM_RENDEZVOUS
    values = {
        "RANK": rank,
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": config.world_size,
        "LOCAL_WORLD_SIZE": str(config.nproc_per_node),
        "GROUP_RANK": str(config.node_rank),
        "MASTER_ADDR": addr,
        "MASTER_PORT": port,
        "ROLE_NAME": settings.engine.role,
    }
    return " ".join(f"{name}={values[name]}" for name in (*TORCHRUN_VARS, "ROLE_NAME"))
