"""torchrun's engine options reach torch elastic's agent (its worker spec, rendezvous and log layout) as torchrun
hands them over."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from launcher.cli.declared_options import declared_names
from launcher.cli.flags import LaunchFlags, launch_options
from launcher.cli.peer_flags import REFUSED, PeerFlags
from launcher.contract.engine_options import EVENT_LOG_HANDLERS, EngineOptions, parse_std
from launcher.contract.job_config import JobConfig, NodePlan, RunSettings
from launcher.contract.program import Program
from launcher.contract.rdzv_conf import parse_rdzv_conf
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.user_values import MAX_SECONDS
from launcher.head.selection import HostFlags
from launcher.run.scope.job_scope import JobFolders
from launcher.run.scope.job_signals import StopState
from launcher.contract.names import SIGNALS_VAR
from launcher.node.node_plan import plan_node
from launcher.run.engine.engine_run import _logs_specs

BACKEND = ResolvedBackend("eager", "--compile-backend", "eager")
ARGV = ["python", "train.py"]


def job(engine: EngineOptions, **settings: object) -> JobConfig:
    return JobConfig(program=Program("script", "train.py"), backend=BACKEND, nproc_per_node=2,
                     settings=RunSettings(engine=engine, **settings))


def placed(job: JobConfig) -> NodePlan:
    """`job` placed on this node, as a launch places it."""
    return plan_node(job, "cpu", 0, {})


def test_every_engine_option_reaches_the_agent(tmp_path: Path) -> None:
    from launcher.run.engine.agent_launch import rendezvous_parameters, worker_spec
    from launcher.run.engine.rank_agent import RankGroupAgent

    engine = EngineOptions(role="trainer", rdzv_conf=parse_rdzv_conf("join_timeout=77, read_timeout=9"),
                           local_addr="10.0.0.7", monitor_interval=0.5, local_ranks_filter=(1,),
                           event_log_handler="console", signals_to_handle="SIGTERM,SIGINT",
                           duplicate_stdout_filters=("loss",), duplicate_stderr_filters=("WARN", "ERR"),
                           virtual_local_rank=True)
    plan = placed(job(engine, grace_period=7.0))
    params = rendezvous_parameters(plan)
    spec = worker_spec(plan, ARGV, params, None)
    assert (spec.role, spec.local_addr, params.local_addr, spec.monitor_interval) == ("trainer", "10.0.0.7",
                                                                                      "10.0.0.7", 0.5)
    assert params.config["join_timeout"] == "77" and params.config["read_timeout"] == "9"
    assert (spec.event_log_handler, plan.environ[SIGNALS_VAR]) == ("console", "SIGTERM,SIGINT")
    assert spec.duplicate_stdout_filters == ["loss"] and spec.duplicate_stderr_filters == ["WARN", "ERR"]
    logs_specs = _logs_specs(plan, tmp_path)
    assert spec.virtual_local_rank and logs_specs._local_ranks_filter == {1}
    agent = RankGroupAgent(spec, logs_specs, plan, StopState("SIGTERM"), JobFolders(tmp_path, tmp_path))
    assert agent._shutdown_timeout == 7
    assert params.run_id == str(uuid.UUID(params.run_id))  # one node, no port: standalone, as for torchrun
    assert rendezvous_parameters(placed(job(EngineOptions(), master_port=29999))).run_id == "none"


@pytest.mark.parametrize("engine", [EngineOptions(standalone=True), EngineOptions()], ids=["standalone", "one-node"])
def test_standalone_gets_a_fresh_run_id_and_leaves_the_address_to_the_engine(engine: EngineOptions) -> None:
    from launcher.run.engine.agent_launch import rendezvous_parameters

    first = rendezvous_parameters(placed(job(engine)))
    second = rendezvous_parameters(placed(job(engine)))
    assert first.run_id != second.run_id and first.local_addr is None


def test_a_static_master_port_gives_the_ranks_the_master_address() -> None:
    from launcher.run.engine.agent_launch import rendezvous_parameters, worker_spec

    plan = placed(job(EngineOptions(), master_port=29999, master_addr="127.0.0.2"))
    params = rendezvous_parameters(plan)
    assert (params.backend, params.endpoint) == ("static", "127.0.0.2:29999")
    assert (worker_spec(plan, ARGV, params, None).master_addr, worker_spec(plan, ARGV, params, None).master_port) == (
        "127.0.0.2", 29999)


@pytest.mark.parametrize(("redirects", "tee", "log_dir", "expected"), [
    ("0", "0", None, ({0: 0, 1: 0}, {0: 2, 1: 2})),        # ours: stderr teed, stdout inherited
    ("0", "0", "logs", ({0: 0, 1: 0}, {0: 3, 1: 3})),      # --log-dir: both teed
    ("3", "0", None, ({0: 3, 1: 3}, {0: 0, 1: 0})),        # files only, as asked
    ("0", "1", None, ({0: 0, 1: 0}, {0: 3, 1: 3})),        # stdout teed too
    ("0:2", "1:1", None, ({0: 2, 1: 0}, {0: 0, 1: 3})),    # per rank
])
def test_redirects_and_tee_are_the_users_and_ours_fills_the_rest(tmp_path: Path, redirects: str, tee: str,
                                                                 log_dir: str | None,
                                                                 expected: tuple[dict, dict]) -> None:
    plan = placed(job(EngineOptions(redirects=redirects, tee=tee), log_dir=log_dir))
    found = _logs_specs(plan, tmp_path)
    assert ({rank: int(value) for rank, value in found._redirects.items()},
            {rank: int(value) for rank, value in found._tee.items()}) == expected


def test_std_values_read_as_torchs_std_from_str() -> None:
    from torch.distributed.elastic.multiprocessing import Std

    for text in ("0", "3", "0:1,1:2"):
        theirs = Std.from_str(text)
        ours = parse_std("--tee", text)
        assert (ours == int(theirs)) if isinstance(ours, int) else ours == {k: int(v) for k, v in theirs.items()}


def test_shutdown_timeout_is_torchruns_name_for_the_grace_period() -> None:
    refused = {name: None for name in REFUSED}
    refused.update(elastic_training=False)
    peers = PeerFlags(each_rank_log=None, bind_core_list=None, start_method="spawn", run_path=False,
                      bind_cores_to_rank=False, no_ssh=False, no_ssh_check=False, no_local_rank=False,
                      force_multi=False, shutdown_timeout=9, save_pid=False, refused=refused)
    declared = {name: None for name in declared_names()}
    ours = LaunchFlags(program=Program("script", "train.py"), declared={**declared, "grace_period": 5.0})
    options, through_runner = launch_options(ours, peers, HostFlags(), {"shutdown_timeout"})
    assert options.settings.grace_period == 9.0 and not through_runner


def test_the_event_log_handlers_accepted_are_torch_elastics_registered_ones() -> None:
    from torch.distributed.elastic.events import handlers

    assert set(EVENT_LOG_HANDLERS) == set(handlers._log_handlers)


@pytest.mark.parametrize("conf", ["join_timeout=1,last_call_timeout=1,close_timeout=1,heartbeat_timeout=1",
                                  f"join_timeout={MAX_SECONDS},keep_alive_interval={MAX_SECONDS}",
                                  "keep_alive_interval=1,keep_alive_max_attempt=1000"])
def test_the_rendezvous_settings_we_accept_torchs_dynamic_rendezvous_accepts(conf: str) -> None:
    from torch.distributed import HashStore
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

    params = RendezvousParameters("c10d", "localhost:0", "run", 1, 1, **parse_rdzv_conf(conf))
    store = HashStore()
    handler = create_handler(store, C10dRendezvousBackend(store, "run"), params)
    assert handler.settings.timeout.join.total_seconds() == int(params.get("join_timeout", 600))


@pytest.mark.parametrize("conf", ["is_host=yes,read_timeout=60,store_type=TCP,timeout=1", "is_host=0"])
def test_the_store_settings_we_accept_torch_reads(conf: str) -> None:
    from torch.distributed.elastic.rendezvous import RendezvousParameters

    params = RendezvousParameters("c10d", "localhost:0", "run", 1, 1, **parse_rdzv_conf(conf))
    assert params.get_as_bool("is_host") in (True, False)
    assert params.get_as_int("read_timeout", 60) > 0 and params.get("store_type", "tcp").strip().lower() == "tcp"
