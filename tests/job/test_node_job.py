"""A node of a hostfile launch gets the head's job as data and only places it on itself (in-process).

The head's side is `node_job` (the layout only the head knows), the node's is `place_node_job`: no option
is re-rendered, nothing is resolved again, and the node table decides the node's rank and devices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from launcher.contract.engine_options import EngineOptions
from launcher.contract.hosts import NodeSpec
from launcher.contract.job_config import JobConfig, RunSettings
from launcher.contract.job_json import job_from_json, job_to_json
from launcher.contract.names import NODE_JOB_VAR
from launcher.contract.names import CPU_BINDING_VAR
from launcher.contract.node_table import node_row_env, node_table_env
from launcher.contract.program import Program
from launcher.errors import LaunchError, NodeIdentityError, ScriptNotFoundError
from launcher.head.commands import node_job
from launcher.job.build_job import place_node_job, prepare_job
from launcher.job.node_job import read_node_job
from launcher.job.options import LaunchOptions
from launcher.job.plan_table import plan_rows

NODES = (NodeSpec("hosta", (0, 1, 2)), NodeSpec("hostb", (0, 1)))


@pytest.fixture
def prepared(tmp_path: Path) -> JobConfig:
    """The job as the head prepares it, before it knows the nodes."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / ".env").write_text("FROM_ENV_FILE=yes\n")
    settings = RunSettings(max_restarts=2, grace_period=1.5, timeout=60.0, bind_cores="", verbose=True,
                           engine=EngineOptions(role="trainer", tee="3"))
    options = LaunchOptions(Program("script", "train.py", ("--lr", "a b")), settings, compile_backend="eager",
                            accelerator="cpu")
    return prepare_job(options, {"PATH": "/usr/bin"}, tmp_path, place=False).config  # as the head does


@pytest.fixture
def head_job(prepared: JobConfig) -> JobConfig:
    return node_job(prepared, NODES)


def test_the_job_survives_its_trip_as_json_unchanged(head_job: JobConfig) -> None:
    assert job_from_json(job_to_json(head_job)) == head_job
    assert (head_job.node_rank_known, head_job.rank_counts) == (True, ((1, 3), (1, 2)))
    assert (head_job.nnodes, head_job.rdzv_endpoint) == ("2", "hosta:29500")


@pytest.mark.parametrize("table", [{**node_table_env(NODES), "ACCEL_NODE_RANK": "1"}, node_row_env(NODES, 1)],
                         ids=["whole-table", "own-row-as-ssh-sends-it"])
def test_a_node_places_the_heads_job_without_resolving_anything_again(head_job: JobConfig, tmp_path: Path,
                                                                        table: dict[str, str]) -> None:
    environ = {**table, "ACCEL_COMPILE_BACKEND": "inductor", NODE_JOB_VAR: job_to_json(head_job)}
    placed = place_node_job(read_node_job(environ), environ, tmp_path)
    plan = placed.plan

    assert placed.config == head_job  # the node's own ACCEL_COMPILE_BACKEND does not count
    assert (plan.node_rank, plan.local_world_size) == (1, 2)
    assert (plan.rendezvous.options["accel_node_addr"], plan.rendezvous.options["is_host"]) == ("hostb", False)
    assert plan.rank_env["FROM_ENV_FILE"] == "yes" and plan.rank_env["ACCEL_COMPILE_BACKEND"] == "eager"
    assert plan.rank_env["ACCEL_COMPILE_BACKEND_SOURCE"] == "--compile-backend"
    assert len(plan.node_env[CPU_BINDING_VAR].split(";")) == 2  # --bind_cores_to_rank: this node's own cores


def test_a_node_without_its_place_in_the_node_table_is_refused(head_job: JobConfig, tmp_path: Path) -> None:
    with pytest.raises(NodeIdentityError, match="a node launcher needs the node table"):
        place_node_job(head_job, {}, tmp_path)


def test_a_node_whose_program_is_missing_there_is_refused(head_job: JobConfig, tmp_path: Path) -> None:
    (tmp_path / "train.py").unlink()
    environ = {**node_table_env(NODES), "ACCEL_NODE_RANK": "0"}
    with pytest.raises(ScriptNotFoundError, match="'train.py': no such file"):
        place_node_job(head_job, environ, tmp_path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("value", "expected"), [
    (None, "ACCEL_NODE_JOB='': not set: node launchers are started by accel-launch --hostfile"),
    ('{"program": 1}', "ACCEL_NODE_JOB='{\"program\": 1}': not a job written by accel-launch --hostfile "
     "(the job.program must be an object)"),
    ('{"settings": {"grace_period": NaN}}', "ACCEL_NODE_JOB='{\"settings\": {\"grace_period\": NaN}}': not a job "
     "written by accel-launch --hostfile (the job.settings.grace_period must be a finite number, got nan)"),
])
def test_a_node_launcher_without_a_job_from_its_head_says_so_in_one_line(value: str | None, expected: str,
                                                                        tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           **({NODE_JOB_VAR: value} if value is not None else {})}
    result = subprocess.run([sys.executable, "-m", "launcher.node"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=50)
    assert (result.returncode, result.stderr) == (2, f"accel-launch: error: {expected}\n")


@pytest.mark.parametrize(("path", "value", "fragment"), [
    (("settings", "grace_period"), float("nan"), "the job.settings.grace_period must be a finite number, got nan"),
    (("settings", "timeout"), float("inf"), "the job.settings.timeout must be a finite number, got inf"),
    (("settings", "grace_period"), "5", "the job.settings.grace_period must be a number, got str"),
    (("nproc_per_node",), True, "the job.nproc_per_node must be a whole number, got bool"),
    (("settings", "engine", "monitor_interval"), float("-inf"), "monitor_interval must be a finite number"),
    (("settings", "engine", "rdzv_conf"), {"join_timeout": 5}, "rdzv_conf['join_timeout'] must be text, got int"),
    (("settings", "engine", "local_ranks_filter"), "0", "local_ranks_filter must be a list, got str"),
    (("settings", "surprise"), 1, "the job.settings has no field 'surprise'"),
    (("program", "args"), ["a\0b"], "the job.program.args[0] holds a NUL character"),
    (("job_env",), {"A=B": "1"}, "its environment's 'A=B' is not a variable name"),
    (("settings", "grace_period"), 1e9, "--grace-period: 1000000000.0 (at most 3600 seconds)"),
    (("settings", "engine", "rdzv_conf"), {"join_timeout": "-5"}, "--rdzv-conf join_timeout: '-5'"),
    (("settings", "engine", "role"), "a\nb", "--role: 'a\\nb' (holds the control character U+000A"),
    (("settings", "engine", "event_log_handler"), "nosuchhandler", "--event-log-handler: 'nosuchhandler'"),
    (("rank_counts",), [[1, 3]], "rank_counts [[1, 3]] must be runs of (nodes, ranks), 1 or more each, covering "
     "the --nnodes 2 nodes"),
    (("rank_counts",), [[2, 3, 4]], "rank_counts [[2, 3, 4]] must be runs of (nodes, ranks)"),
    (("rank_counts",), [[2, 0]], "rank_counts [[2, 0]] must be runs"),
    (("program",), {"mode": "script", "target": "train.py", "args": [], "surprise": 1},
     "the job.program has no field 'surprise'"),
    (("rendezvous",), {"backend": "x", "endpoint": "h:1", "options": {}}, "the job has no field 'rendezvous'"),
    (("node_env",), {"CUDA_VISIBLE_DEVICES": "0"}, "the job has no field 'node_env'"),
    (("settings", "timeout"), -1.0, "--timeout: -1.0 (must be more than 0 seconds)"),
    (("settings", "master_addr"), "a b", "--master-addr: 'a b' (expected a host name or an IP address)"),
    (("settings", "rdzv_backend"), "c10", "--rdzv-backend: 'c10' (expected one of torch's rendezvous handlers"),
    (("settings", "max_restarts"), 1001, "--max-restarts: 1001 (at most 1000)"),
    pytest.param(("settings", "rdzv_timeout"), int("9" * 4000), "--rdzv-timeout: 9999", id="huge-rdzv-timeout"),
    pytest.param(("settings", "grace_period"), int("9" * 300), "--grace-period: 1e+300 (at most 3600", id="huge-grace"),
])
def test_a_node_refuses_a_job_whose_field_has_the_wrong_type_or_value_naming_the_field(
    head_job: JobConfig, path: tuple[str, ...], value: object, fragment: str
) -> None:
    data = json.loads(job_to_json(head_job))
    *parents, name = path
    target = data
    for parent in parents:
        target = target[parent]
    target[name] = value
    with pytest.raises(LaunchError) as refused:
        read_node_job({NODE_JOB_VAR: json.dumps(data)})
    assert fragment in str(refused.value)


def test_a_node_of_an_uneven_table_counts_the_earlier_nodes_ranks_and_takes_the_direct_path(
        prepared: JobConfig, tmp_path: Path) -> None:
    job = node_job(replace(prepared, settings=replace(prepared.settings, max_restarts=0)), NODES)
    assert (job.node_rank_known, job.rank_counts) == (True, ((1, 3), (1, 2)))
    placed = place_node_job(job, {**node_row_env(NODES, 1)}, tmp_path)

    assert placed.plan.engine_reason is None
    assert [placed.plan.global_rank(local) for local in range(2)] == [3, 4] and placed.plan.world_size == "5"
    rows = dict(plan_rows(placed, {}))
    assert rows["rank env 1"].startswith("RANK=4 LOCAL_RANK=1 WORLD_SIZE=5 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 "
                                         "MASTER_ADDR=hosta MASTER_PORT=29500")


def test_a_node_whose_table_row_disagrees_with_the_heads_count_is_refused(head_job: JobConfig, tmp_path: Path) -> None:
    environ = {**node_table_env((NodeSpec("hosta", (0, 1, 2)), NodeSpec("hostb", (0,)))), "ACCEL_NODE_RANK": "1"}
    with pytest.raises(NodeIdentityError, match="gives node 1 1 rank\\(s\\), but its head counted 2"):
        place_node_job(head_job, environ, tmp_path)


def test_a_uniform_table_of_ten_thousand_nodes_crosses_as_one_pair_of_counts(prepared: JobConfig) -> None:
    job = node_job(prepared, [NodeSpec(f"host{index}", (0, 1)) for index in range(10_000)])
    assert job.rank_counts == ((10_000, 2),) and job.ranks_before(10_000) == 20_000
    assert job_from_json(job_to_json(job)) == job
