"""The job decides its rendezvous and launch path once, where it is placed on a node; the rest read the fields.

ACCEL_LAUNCH_PATH and torch elastic's service variables count as they were when the job was prepared, and the
decision crosses to a node inside the job (docs/ARCHITECTURE.md, "Where things are decided").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from launcher.contract.hosts import NodeSpec
from launcher.contract.job_config import JobConfig, Program, Rendezvous, RunSettings
from launcher.contract.node_table import node_table_env
from launcher.errors import UsageError
from launcher.multinode.head.commands import node_job
from launcher.prepare.build_job import place_node_job, prepare_job
from launcher.prepare.options import LaunchOptions
from launcher.prepare.plan import plan_rows

LAUNCHER = Path(__file__).resolve().parents[2] / "launcher"
DECIDERS = {"rendezvous", "engine_reason"}


def _options(settings: RunSettings | None = None) -> LaunchOptions:
    return LaunchOptions(Program("script", "train.py"), settings or RunSettings(), compile_backend="eager",
                         accelerator="cpu")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("")
    return tmp_path


def test_only_the_job_preparation_calls_the_rendezvous_and_path_choices() -> None:
    callers = set()
    for path in LAUNCHER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in DECIDERS:
                callers.add(str(path.relative_to(LAUNCHER)))
    assert callers == {"prepare/build_job.py"}


def test_a_prepared_lone_node_holds_its_rendezvous_and_the_direct_path(folder: Path) -> None:
    config = prepare_job(_options(), {}, folder).config
    assert config.rendezvous == Rendezvous("one-node", "127.0.0.1:0", {"timeout": 900, "join_timeout": 900})
    assert config.engine_reason is None


def test_the_path_is_read_from_the_environment_once_and_the_plan_shows_what_was_decided(folder: Path) -> None:
    environ = {"ACCEL_LAUNCH_PATH": "engine"}
    config = prepare_job(_options(), environ, folder).config
    environ["ACCEL_LAUNCH_PATH"] = "auto"  # after preparing: no longer read
    assert config.engine_reason == "ACCEL_LAUNCH_PATH=engine"
    assert dict(plan_rows(config, "flag"))["launch path"] == (
        "engine: torch elastic's agent starts the ranks (ACCEL_LAUNCH_PATH=engine)")


def test_torch_elastics_services_asked_for_at_preparation_send_the_job_to_the_engine(folder: Path) -> None:
    config = prepare_job(_options(), {"TORCHELASTIC_HEALTH_CHECK_PORT": "9999"}, folder).config
    assert config.engine_reason is not None and "TORCHELASTIC_HEALTH_CHECK_PORT" in config.engine_reason


def test_a_bad_launch_path_is_refused_on_the_head_that_places_nothing(folder: Path) -> None:
    with pytest.raises(UsageError, match=r"ACCEL_LAUNCH_PATH: 'sideways' \(expected one of auto, engine\)"):
        prepare_job(_options(), {"ACCEL_LAUNCH_PATH": "sideways"}, folder, place=False)


def test_a_node_decides_where_it_places_the_heads_job_and_the_decision_survives_json(folder: Path) -> None:
    head = prepare_job(_options(RunSettings(max_restarts=1)), {}, folder, place=False).config
    assert (head.rendezvous, head.engine_reason) == (None, None)  # the head places nothing, so decides nothing
    nodes = (NodeSpec("hosta", (0,)), NodeSpec("hostb", (0,)))
    environ = {**node_table_env(nodes), "ACCEL_NODE_RANK": "1"}
    placed = place_node_job(node_job(head, nodes), environ, folder).config
    assert placed.rendezvous is not None and placed.rendezvous.backend == "accel-c10d"
    assert placed.rendezvous.endpoint == "hosta:29500" and placed.rendezvous.options["is_host"] is False
    assert placed.engine_reason == "--max-restarts above 0"
    assert JobConfig.from_json(placed.to_json()) == placed
