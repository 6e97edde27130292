"""This node's plan (launcher/node/node_plan.py): derived once from the job, the node's facts and the launcher's
environment; the drivers read it and no environment."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from launcher.contract.engine_options import EngineOptions
from launcher.contract.job_config import JobConfig, RunSettings
from launcher.contract.names import COMPILE_STORE_VAR, LAUNCHER_PID_VAR
from launcher.contract.program import Program
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.errors import UsageError
from launcher.contract.names import SIGNALS_VAR
from launcher.node.node_plan import SHARE_STORE_VAR, TEMPLATE_ENV, plan_node
from launcher.run.group.rank_logs import line_prefix

RUN = Path(__file__).resolve().parents[2] / "launcher" / "run"
BACKEND = ResolvedBackend("eager", "--compile-backend", "eager")


def _job(nproc: int = 2, engine: EngineOptions | None = None, **settings: object) -> JobConfig:
    return JobConfig(program=Program("script", "train.py"), backend=BACKEND, nproc_per_node=nproc,
                     settings=RunSettings(engine=engine or EngineOptions(), **settings), job_env={"FROM_FILE": "1"})


def _plan(job: JobConfig, environ: dict[str, str]):
    return plan_node(job, "cpu", 0, environ)


def test_only_the_run_and_the_keeper_read_the_launchers_environment() -> None:
    """The run makes the plan from it (and exports it for torch's agent); the keeper starts with it."""
    readers = {str(path.relative_to(RUN)) for path in RUN.rglob("*.py") if "os.environ" in path.read_text()}
    assert readers == {"engine/engine_run.py", "scope/job_keeper.py"}


def test_the_plan_is_frozen_and_its_environment_read_only() -> None:
    plan = _plan(_job(), {"HOME": "/home/x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.run_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.environ["HOME"] = "/elsewhere"  # type: ignore[index]


def test_each_rank_starts_from_the_launchers_environment_the_jobs_and_the_launchers_mark() -> None:
    plan = _plan(_job(engine=EngineOptions(signals_to_handle="SIGTERM")), {"HOME": "/home/x", "FROM_FILE": "0"})
    assert plan.environ["HOME"] == "/home/x" and plan.environ["FROM_FILE"] == "1"
    assert plan.environ[LAUNCHER_PID_VAR] == str(os.getpid()) and plan.environ[SIGNALS_VAR] == "SIGTERM"
    assert SHARE_STORE_VAR not in plan.environ


@pytest.mark.parametrize(("environ", "expected"), [({}, "1"), ({SHARE_STORE_VAR: "0"}, "0")])
def test_a_restartable_group_gets_a_store_of_its_own_unless_the_user_said(environ: dict, expected: str) -> None:
    assert _plan(_job(max_restarts=1), environ).environ[SHARE_STORE_VAR] == expected


@pytest.mark.parametrize(("tee", "environ", "nproc", "expected"), [
    ("0", {}, 2, (b"", b"[rank1]:")),                         # ours: stderr under the rank, stdout bare
    ("0", {}, 1, (b"", b"")),                                 # a one-rank job: no prefix
    ("3", {}, 2, (b"[default1]:", b"[default1]:")),           # teed by the user: torch's header
    ("0", {TEMPLATE_ENV: "<${rank}> "}, 2, (b"", b"<1> ")),  # torchrun's template
])
def test_each_streams_prefix_is_torchruns(tee: str, environ: dict, nproc: int, expected: tuple[bytes, bytes]) -> None:
    plan = _plan(_job(nproc, EngineOptions(tee=tee)), environ)
    local_rank = nproc - 1
    assert (line_prefix(plan, local_rank, 1), line_prefix(plan, local_rank, 2)) == expected


def test_the_path_is_decided_where_the_plan_is_made() -> None:
    assert _plan(_job(), {}).engine_reason is None
    assert _plan(_job(max_restarts=1), {}).engine_reason == "--max-restarts above 0"
    assert _plan(_job(), {"ACCEL_LAUNCH_PATH": "engine"}).engine_reason == "ACCEL_LAUNCH_PATH=engine"


def _two_nodes() -> JobConfig:
    return dataclasses.replace(_job(nproc=2, master_port=29555), nnodes="2")


@pytest.mark.parametrize(("nnodes", "restarts", "endpoint", "backend", "expected"), [
    ("2", 1, "hosta:29400", "c10d", "hosta:29400"),   # the rendezvous's store outlives each attempt's rank 0
    ("1:2", 0, "hosta:29400", "c10d", "hosta:29400"),  # a range admits a node that joins later
    ("2", 0, "hosta:29400", "c10d", None),              # no restart: rank 0's store lives as long as the job
    ("1", 1, "", "c10d", None),                         # one node: its ranks share through the node's copies
    ("2", 1, "hosta", "c10d", None),                    # no port given: not known to the ranks
])
def test_a_restartable_job_of_several_nodes_keeps_its_graphs_in_the_rendezvous_store(
        nnodes: str, restarts: int, endpoint: str, backend: str, expected: str | None) -> None:
    job = dataclasses.replace(_job(nproc=1, max_restarts=restarts, rdzv_backend=backend), nnodes=nnodes,
                              rdzv_endpoint=endpoint)
    assert plan_node(job, "cpu", 0, {}).environ.get(COMPILE_STORE_VAR) == expected


def test_each_rank_is_placed_as_torchruns_static_form_places_it() -> None:
    plan = plan_node(_two_nodes(), "cpu", 1, {})
    place = plan.rank_place(1, ("hosta", 29555))
    assert (place.rank, place.local_rank, place.group_rank, place.world_size, place.local_world_size) == (3, 1, 1, 4, 2)
    assert place.master == ("hosta", 29555) and place.run_id == plan.run_id


def test_a_node_rank_outside_the_job_is_refused_by_the_plan() -> None:
    with pytest.raises(UsageError, match="--node-rank: 2 .*must be below --nnodes 2"):
        plan_node(_two_nodes(), "cpu", 2, {})
