"""Which launches the launcher starts itself, which go to torch elastic's agent, and the dry-run row that says
which and why (launcher/node/path_choice.py)."""

from __future__ import annotations

import pytest

from tests.launches import RECORD_RANK, CliRunnerFn

DIRECT = "direct: the launcher starts the ranks itself (one node, no restarts); rank 0 hosts the store"


@pytest.mark.parametrize("flags", [[], ["--nproc-per-node", "4"], ["--standalone"], ["--master-port", "29111"],
                                   ["--rdzv-backend", "static"], ["--tee", "3", "--log-dir", "logs"],
                                   ["--signals-to-handle", "SIGUSR1,SIGTERM"], ["-m"]],
                         ids=["default", "four-ranks", "standalone", "master-port", "static", "tee", "signals", "module"])
def test_a_lone_node_without_restarts_takes_the_direct_path(cli: CliRunnerFn, flags: list[str]) -> None:
    target = "json.tool" if "-m" in flags else str(RECORD_RANK)
    result = cli(["--dry-run", *flags, target])

    assert result.status == 0, result.stderr
    assert result.row("launch path") == DIRECT


@pytest.mark.parametrize(("flags", "env", "reason"), [
    ([], {"ACCEL_LAUNCH_PATH": "engine"}, "ACCEL_LAUNCH_PATH=engine"),
    (["--max-restarts", "1"], {}, "--max-restarts above 0"),
    (["--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:29400"], {}, "a node range (--nnodes MIN:MAX)"),
    (["--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:29400"], {},
     "several nodes meeting at a rendezvous endpoint, where a node learns its rank only there"),
    (["--rdzv-endpoint", "127.0.0.1:29400"], {}, "a rendezvous endpoint to meet at"),
    (["--rdzv-backend", "static", "--rdzv-endpoint", "127.0.0.1:29400"], {}, "a rendezvous endpoint to meet at"),
    (["--no-python"], {}, "--no-python (rank 0 runs no bootstrap to host the store)"),
    (["--event-log-handler", "console"], {}, "--event-log-handler"),
    (["--duplicate-stdout-filters", "loss"], {}, "--duplicate-*-filters"),
    ([], {"TORCHELASTIC_ENABLE_FILE_TIMER": "1"}, "TORCHELASTIC_ENABLE_FILE_TIMER or TORCHELASTIC_HEALTH_CHECK_PORT"),
    ([], {"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "30"},
     "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (the agent's check of ranks in uninterruptible sleep)"),
], ids=["forced", "restarts", "node-range", "c10d-nodes", "endpoint", "static-endpoint", "no-python", "event-log",
        "filters", "watchdog", "uninterruptible"])
def test_what_only_the_engine_does_sends_the_launch_there_and_the_plan_says_why(
        cli: CliRunnerFn, flags: list[str], env: dict[str, str], reason: str) -> None:
    target = "true" if "--no-python" in flags else str(RECORD_RANK)
    result = cli(["--dry-run", *flags, target], env=env)

    assert result.status == 0, result.stderr
    assert result.row("launch path").startswith("engine: torch elastic's agent starts the ranks (")
    assert reason in result.row("launch path")


def test_an_unknown_launch_path_is_one_line_and_exit_2(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", str(RECORD_RANK)], env={"ACCEL_LAUNCH_PATH": "fast"})

    assert result.status == 2
    assert result.stderr == ("accel-launch: error: invalid value for ACCEL_LAUNCH_PATH: 'fast' "
                             "(expected one of auto, engine)\n")


SEVERAL = ("direct: each node's launcher starts its ranks itself (a fixed node count, its node rank known, no "
           "restarts); global rank 0 hosts the store on node 0's --master-port")


@pytest.mark.parametrize("node_rank", ["0", "1"])
def test_torchruns_static_form_on_several_nodes_takes_the_direct_path(cli: CliRunnerFn, node_rank: str) -> None:
    result = cli(["--dry-run", "--nnodes", "2", "--node-rank", node_rank, "--master-addr", "10.1.2.3",
                  "--master-port", "29123", "--nproc-per-node", "2", str(RECORD_RANK)])

    assert result.status == 0, result.stderr
    assert result.row("launch path") == SEVERAL
    first = int(node_rank) * 2
    assert result.row("rank env 0").startswith(f"RANK={first} LOCAL_RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 "
                                               f"GROUP_RANK={node_rank} MASTER_ADDR=10.1.2.3 MASTER_PORT=29123")


SLURM = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu[1-2]",
         "SLURMD_NODENAME": "gpu2", "SLURM_JOB_ID": "7", "ACCEL_ACCELERATOR": "cpu"}


def test_srun_with_a_number_of_ranks_takes_the_direct_path_at_the_first_nodes_master_port(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nproc-per-node", "2", "--master-port", "29123", str(RECORD_RANK)], env=SLURM)

    assert result.status == 0, result.stderr
    assert result.row("launch path") == (
        "direct: each node's launcher starts its ranks itself (a fixed node count, each node's rank and rank count "
        "known before it starts, no restarts); global rank 0 hosts the store on node 0, at gpu1:29123")
    assert result.row("rank env 1").startswith("RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 "
                                               "MASTER_ADDR=gpu1 MASTER_PORT=29123")


@pytest.mark.parametrize(("flags", "reason"), [
    (["--nproc-per-node", "auto"], "several nodes whose rank counts the launcher does not know before they start"),
    (["--rdzv-endpoint", "10.0.0.9:29400"], "several nodes meeting at a rendezvous endpoint"),
    (["--max-restarts", "1"], "--max-restarts above 0"),
], ids=["rank-count-unknown", "users-endpoint", "restarts"])
def test_srun_goes_to_the_engine_where_a_node_learns_its_place_only_there_and_the_plan_says_why(
        cli: CliRunnerFn, flags: list[str], reason: str) -> None:
    result = cli(["--dry-run", *flags, str(RECORD_RANK)], env=SLURM)

    assert result.status == 0, result.stderr
    assert result.row("launch path").startswith(f"engine: torch elastic's agent starts the ranks ({reason}")


@pytest.mark.parametrize("value", ["0", "-5", "soon", ""])
def test_an_uninterruptible_timeout_torch_ignores_keeps_the_direct_path(cli: CliRunnerFn, value: str) -> None:
    result = cli(["--dry-run", str(RECORD_RANK)], env={"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": value})
    assert result.status == 0, result.stderr
    assert result.row("launch path").startswith("direct:")
