"""This node's plan (launcher/run/node_plan.py): derived once from the placed job and the launcher's environment;
the drivers read it and no environment."""

from __future__ import annotations

import ast
import dataclasses
import os
from dataclasses import replace
from pathlib import Path

import pytest

from launcher.contract.engine_options import EngineOptions
from launcher.contract.job_config import JobConfig, Program, RunSettings
from launcher.contract.names import LAUNCHER_PID_VAR
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.run.node_plan import SHARE_STORE_VAR, TEMPLATE_ENV, plan_node
from launcher.run.rank_start import SIGNALS_VAR
from launcher.run.rendezvous.choice import rendezvous

RUN = Path(__file__).resolve().parents[2] / "launcher" / "run"
BACKEND = ResolvedBackend("eager", "--compile-backend", "eager")
NODE_FACTS = {"run_id", "master_addr", "standalone_like"}


def _job(nproc: int = 2, engine: EngineOptions | None = None, **settings: object) -> JobConfig:
    config = JobConfig(program=Program("script", "train.py"), backend=BACKEND, accelerator="cpu", nproc_per_node=nproc,
                       settings=RunSettings(engine=engine or EngineOptions(), **settings), job_env={"FROM_FILE": "1"})
    return replace(config, rendezvous=rendezvous(config))


def _calls(names: set[str]) -> set[str]:
    """The modules of launcher/run/ that call a function named in `names`."""
    callers = set()
    for path in RUN.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names:
                callers.add(str(path.relative_to(RUN)))
    return callers


def test_the_nodes_facts_are_derived_only_where_the_plan_is_made() -> None:
    """Outside the module that words them (rendezvous/choice.py, where one fact reads another)."""
    assert _calls(NODE_FACTS) - {"rendezvous/choice.py"} == {"node_plan.py"}


def test_only_the_run_and_the_keeper_read_the_launchers_environment() -> None:
    """The run makes the plan from it (and exports it for torch's agent); the keeper starts with it."""
    readers = {str(path.relative_to(RUN)) for path in RUN.rglob("*.py") if "os.environ" in path.read_text()}
    assert readers == {"spawn.py", "job_keeper.py"}


def test_the_plan_is_frozen_and_its_environment_read_only() -> None:
    plan = plan_node(_job(), {"HOME": "/home/x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.run_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.environ["HOME"] = "/elsewhere"  # type: ignore[index]


def test_each_rank_starts_from_the_launchers_environment_the_jobs_and_the_launchers_mark() -> None:
    plan = plan_node(_job(engine=EngineOptions(signals_to_handle="SIGTERM")), {"HOME": "/home/x", "FROM_FILE": "0"})
    assert plan.environ["HOME"] == "/home/x" and plan.environ["FROM_FILE"] == "1"
    assert plan.environ[LAUNCHER_PID_VAR] == str(os.getpid()) and plan.environ[SIGNALS_VAR] == "SIGTERM"
    assert SHARE_STORE_VAR not in plan.environ


@pytest.mark.parametrize(("environ", "expected"), [({}, "1"), ({SHARE_STORE_VAR: "0"}, "0")])
def test_a_restartable_group_gets_a_store_of_its_own_unless_the_user_said(environ: dict, expected: str) -> None:
    assert plan_node(_job(max_restarts=1), environ).environ[SHARE_STORE_VAR] == expected


@pytest.mark.parametrize(("tee", "environ", "nproc", "expected"), [
    ("0", {}, 2, (b"", b"[rank1]:")),                         # ours: stderr under the rank, stdout bare
    ("0", {}, 1, (b"", b"")),                                 # a one-rank job: no prefix
    ("3", {}, 2, (b"[default1]:", b"[default1]:")),           # teed by the user: torch's header
    ("0", {TEMPLATE_ENV: "<${rank}> "}, 2, (b"", b"<1> ")),  # torchrun's template
])
def test_each_streams_prefix_is_torchruns(tee: str, environ: dict, nproc: int, expected: tuple[bytes, bytes]) -> None:
    plan = plan_node(_job(nproc, EngineOptions(tee=tee)), environ)
    local_rank = nproc - 1
    assert (plan.prefix(local_rank, 1), plan.prefix(local_rank, 2)) == expected


def test_the_path_is_the_one_the_job_decided() -> None:
    job = _job()
    assert plan_node(job, {}).engine_reason is None
    assert plan_node(replace(job, engine_reason="--max-restarts above 0"), {}).engine_reason == "--max-restarts above 0"
