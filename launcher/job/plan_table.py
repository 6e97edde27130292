"""The resolved plan of a launch as an aligned table: logged before a launch, printed by `--dry-run`."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from launcher.contract.job_config import AGREEMENT_PREFIX, ONE_NODE_BACKEND, NodePlan
from launcher.contract.names import COMPILE_SECRET_VAR, TORCHRUN_VARS
from launcher.contract.program import rank_command
from launcher.escaped import one_line
from launcher.job.build_job import PreparedJob
from launcher.job.compile_keep import compile_threads_text, folder_text
from launcher.job.rank_defaults import compile_cache_text
from launcher.node.path_choice import path_text

__all__ = ["plan_rows", "format_plan", "ENV_FILE_ROW"]

ENV_FILE_ROW = ".env file"

FREE_PORT = "<free port>"
SECRET = "<secret>"
FROM_RENDEZVOUS = "<from rendezvous>"


def plan_rows(prepared: PreparedJob, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(label, value) rows: backend and source, accelerator, the env file read, the program; then, where the job is
    placed on this node, its layout, rendezvous, path, per-rank environment and command (a hostfile launch's head
    adds its own rows: launcher.head.commands). `environ`: the launcher's."""
    config, env_file = prepared.config, prepared.env_file
    rows = [
        ("compile backend", config.backend.describe()),
        ("accelerator", f"{prepared.accelerator.name} ({prepared.detected_by})"),
        (ENV_FILE_ROW, str(env_file) if env_file is not None else "(none)"),
        ("program", config.program.describe()),
    ]
    plan = prepared.plan
    if plan is None:
        return rows
    low, high = config.node_range
    rows += [
        ("nodes", f"{config.nnodes} (this is node {plan.node_rank})"),
        ("ranks per node", str(plan.local_world_size)),
        ("world size", plan.world_size if low == high == 1 else f"{plan.world_size} if every node runs "
         f"{plan.local_world_size}"),
        ("rendezvous", _rendezvous_text(plan)),
        ("launch path", path_text(config, plan.engine_reason)),
        ("log dir", config.settings.log_dir or "(none: stdout inherited, stderr kept in a private temp dir)"),
        ("compile cache", compile_cache_text(plan.rank_env, environ, env_file is not None)
         + compile_threads_text(plan.rank_env, environ)),
        ("compile folder", folder_text(plan.rank_env)),
    ]
    for name, value in sorted(plan.rank_env.items()):
        rows.append(("environment", f"{name}={SECRET if name == COMPILE_SECRET_VAR else value}"))
    master = _master(plan)
    for local_rank in range(plan.local_world_size):
        rows.append((f"rank env {local_rank}", _rank_env_text(plan, local_rank, low == high, master)))
    rows.append((f"node {plan.node_rank} command", shlex.join(rank_command(config.program))))
    return rows


def format_plan(rows: list[tuple[str, str]]) -> str:
    """Rows as `label : value` lines, labels padded to one width, each value one line (launcher.escaped)."""
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"  {label.ljust(width)} : {one_line(value)}" for label, value in rows)


def _rendezvous_text(plan: NodePlan) -> str:
    backend, endpoint = plan.rendezvous.backend, plan.rendezvous.endpoint
    if backend == ONE_NODE_BACKEND:
        return "this node alone: its own store on a free port"
    host, _, port = endpoint.rpartition(":")
    engine = backend.removeprefix(AGREEMENT_PREFIX)
    text = f"{engine} at {host}:{FREE_PORT if port == '0' else port}"
    return f"{text} (the nodes check they resolved one compile backend)" if engine != backend else text


def _master(plan: NodePlan) -> tuple[str, str]:
    """MASTER_ADDR and MASTER_PORT as every rank of this node gets them (the same for all of them)."""
    config, settings = plan.job, plan.job.settings
    backend = plan.rendezvous.backend
    if config.node_rank_known and plan.engine_reason is None:  # node 0's launcher listens at the endpoint
        return plan.master_addr, config.rdzv_endpoint.rpartition(":")[2]
    if config.node_range[1] > 1 and backend != AGREEMENT_PREFIX + "static":
        # Several nodes meeting through c10d: node 0 of the rendezvous tells every rank where it listens.
        return "<node 0's address>", FROM_RENDEZVOUS
    return plan.master_addr, FREE_PORT if settings.master_port is None else str(settings.master_port)


def _rank_env_text(plan: NodePlan, local_rank: int, fixed_world: bool, master: tuple[str, str]) -> str:
    settings = plan.job.settings
    addr, port = master
    rank = str(plan.global_rank(local_rank)) if fixed_world else FROM_RENDEZVOUS
    values = {
        "RANK": rank,
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": plan.world_size,
        "LOCAL_WORLD_SIZE": str(plan.local_world_size),
        "GROUP_RANK": str(plan.node_rank),
        "MASTER_ADDR": addr,
        "MASTER_PORT": port,
        "ROLE_NAME": settings.engine.role,
    }
    return " ".join(f"{name}={values[name]}" for name in (*TORCHRUN_VARS, "ROLE_NAME"))
