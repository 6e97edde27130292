"""A node decides its rendezvous, launch path, run id and master address once, where it places the job (its
`NodePlan`); the rest read the plan. The head decides the job (`JobConfig`) and places it nowhere.

ACCEL_LAUNCH_PATH and torch elastic's service variables count as they were when the job was placed (docs/
ARCHITECTURE.md, "Where things are decided").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from launcher.contract.hosts import NodeSpec
from launcher.contract.job_config import JobConfig, NodePlan, Rendezvous, RunSettings
from launcher.contract.job_json import job_from_json, job_to_json
from launcher.contract.node_table import node_table_env
from launcher.contract.program import Program
from launcher.errors import UsageError
from launcher.head.commands import node_job
from launcher.job.build_job import place_node_job, prepare_job
from launcher.job.options import LaunchOptions
from launcher.job.plan_table import plan_rows

LAUNCHER = Path(__file__).resolve().parents[2] / "launcher"
DECIDERS = {"rendezvous", "engine_reason", "run_id", "master_addr", "standalone_like"}


def _options(settings: RunSettings | None = None) -> LaunchOptions:
    return LaunchOptions(Program("script", "train.py"), settings or RunSettings(), compile_backend="eager",
                         accelerator="cpu")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("")
    return tmp_path


def test_only_the_placing_of_a_job_calls_the_choices() -> None:
    """And the module that words them (where one fact reads another), and the head's row of what every node will
    decide (`nodes_path`)."""
    callers = set()
    for path in LAUNCHER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in DECIDERS:
                callers.add(str(path.relative_to(LAUNCHER)))
    assert callers == {"node/node_plan.py", "node/rendezvous_choice.py", "job/build_job.py"}


def test_the_job_holds_nothing_a_node_decides_and_the_plan_holds_it() -> None:
    job_fields = {field.name for field in JobConfig.__dataclass_fields__.values()}
    assert not job_fields & {"accelerator", "node_rank", "rendezvous", "engine_reason", "node_env"}
    assert {"accelerator", "node_rank", "rendezvous", "engine_reason", "node_env", "run_id",
            "master_addr"} <= set(NodePlan.__dataclass_fields__)


def test_a_prepared_lone_node_holds_its_rendezvous_and_the_direct_path(folder: Path) -> None:
    plan = prepare_job(_options(), {}, folder).plan
    assert plan.rendezvous == Rendezvous("one-node", "127.0.0.1:0", {"timeout": 900, "join_timeout": 900})
    assert plan.engine_reason is None


def test_the_path_is_read_from_the_environment_once_and_the_plan_shows_what_was_decided(folder: Path) -> None:
    environ = {"ACCEL_LAUNCH_PATH": "engine"}
    prepared = prepare_job(_options(), environ, folder)
    environ["ACCEL_LAUNCH_PATH"] = "auto"  # after preparing: no longer read
    assert prepared.plan.engine_reason == "ACCEL_LAUNCH_PATH=engine"
    assert dict(plan_rows(prepared, environ))["launch path"] == (
        "engine: torch elastic's agent starts the ranks (ACCEL_LAUNCH_PATH=engine)")


def test_torch_elastics_services_asked_for_at_preparation_send_the_job_to_the_engine(folder: Path) -> None:
    plan = prepare_job(_options(), {"TORCHELASTIC_HEALTH_CHECK_PORT": "9999"}, folder).plan
    assert plan.engine_reason is not None and "TORCHELASTIC_HEALTH_CHECK_PORT" in plan.engine_reason


def test_a_bad_launch_path_is_refused_on_the_head_that_places_nothing(folder: Path) -> None:
    with pytest.raises(UsageError, match=r"ACCEL_LAUNCH_PATH: 'sideways' \(expected one of auto, engine\)"):
        prepare_job(_options(), {"ACCEL_LAUNCH_PATH": "sideways"}, folder, place=False)


def test_a_node_decides_where_it_places_the_heads_job_which_crosses_as_json(folder: Path) -> None:
    head = prepare_job(_options(RunSettings(max_restarts=1)), {}, folder, place=False)
    assert head.plan is None  # the head places nothing, so decides nothing
    nodes = (NodeSpec("hosta", (0,)), NodeSpec("hostb", (0,)))
    sent = node_job(head.config, nodes)
    assert job_from_json(job_to_json(sent)) == sent
    environ = {**node_table_env(nodes), "ACCEL_NODE_RANK": "1"}
    placed = place_node_job(job_from_json(job_to_json(sent)), environ, folder)
    assert placed.config == sent and placed.plan.node_rank == 1
    assert placed.plan.rendezvous.backend == "accel-c10d"
    assert placed.plan.rendezvous.endpoint == "hosta:29500" and placed.plan.rendezvous.options["is_host"] is False
    assert placed.plan.engine_reason == "--max-restarts above 0"
