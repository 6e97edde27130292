"""`--dry-run` prints the resolved plan and starts nothing; the report says what a launch would use."""

from __future__ import annotations

import os

import pytest

from tests.launches import RECORD_RANK, CliRunnerFn, Launcher


def test_dry_run_prints_backend_source_layout_env_and_command_and_starts_nothing(cli: CliRunnerFn) -> None:
    result = cli(["--dry_run", "--nproc_per_node", "3", "--compile_backend", "eager", str(RECORD_RANK), "x"])
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[0] == "accel-launch plan (dry run: nothing started)"
    assert result.row("compile backend") == "eager (from --compile-backend)"
    assert result.row("accelerator").startswith("cpu (")
    assert result.row("program") == f"{RECORD_RANK} x"
    assert (result.row("nodes"), result.row("ranks per node"), result.row("world size")) == ("1 (this is node 0)", "3", "3")
    assert result.row("rendezvous") == "this node alone: its own store on a free port"
    for rank in range(3):
        assert result.row(f"rank env {rank}").startswith(f"RANK={rank} LOCAL_RANK={rank} WORLD_SIZE=3 ")
    given = result.environment()
    assert (given["ACCEL_COMPILE_BACKEND"], given["ACCEL_COMPILE_BACKEND_SOURCE"]) == ("eager", "--compile-backend")
    assert given["ACCEL_ACCELERATOR"] == "cpu"
    assert result.row("node 0 command").endswith(f"-m launcher.rank.bootstrap script {RECORD_RANK} x")


def test_a_plan_row_holding_control_characters_is_one_line_with_them_escaped(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", str(RECORD_RANK), "a\naccel-launch: error: forged\x1b[31m"])
    assert result.status == 0, result.stderr
    assert result.row("program") == f"{RECORD_RANK} 'a\\naccel-launch: error: forged\\x1b[31m'"
    assert all(line.startswith(("accel-launch plan", "  ")) for line in result.stdout.splitlines())


def test_a_given_master_port_makes_a_static_rendezvous_and_reaches_every_rank(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nproc-per-node", "2", "--master-port", "29111", "--log-dir", "logs",
                  str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("rendezvous") == "static at 127.0.0.1:29111"
    assert all("MASTER_PORT=29111" in result.row(f"rank env {rank}") for rank in (0, 1))
    assert result.row("log dir") == "logs"


def test_a_restartable_node_keeps_the_c10d_rendezvous_on_a_free_port(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nproc-per-node", "2", "--max-restarts", "1", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("rendezvous") == "c10d at 127.0.0.1:<free port>"


def test_with_a_node_range_the_world_size_and_ranks_come_from_the_rendezvous(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-endpoint", "127.0.0.1:29400",
                  str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("world size") == "2..4 if every node runs 2"  # 1 to 2 nodes of 2 ranks
    assert result.row("rank env 1").startswith("RANK=<from rendezvous> LOCAL_RANK=1 ")
    assert result.row("rendezvous") == "c10d at 127.0.0.1:29400 (the nodes check they resolved one compile backend)"
    # c10d's node 0 tells the ranks where it listens; --master-addr plays no part.
    assert "MASTER_ADDR=<node 0's address> MASTER_PORT=<from rendezvous> " in result.row("rank env 1")


def test_several_static_nodes_give_every_rank_the_master_address_and_port(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port",
                  "29400", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("rendezvous") == "static at 10.0.0.1:29400 (the nodes check they resolved one compile backend)"
    assert "GROUP_RANK=1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29400 " in result.row("rank env 0")


@pytest.mark.timeout(90)
def test_the_report_names_accelerator_backends_and_what_a_launch_would_resolve(launch: Launcher) -> None:
    result = launch(["report"], env={"ACCEL_COMPILE_BACKEND": "eager"})
    assert result.returncode == 0, result.stderr
    rows = dict(line.strip().split(" : ", 1) for line in result.stdout.splitlines()[1:])
    rows = {key.strip(): value for key, value in rows.items()}
    assert rows["accelerator"] == "cpu"
    assert rows["communication backend"] == "gloo"
    assert rows["default compile backend"] == "inductor"
    assert "inductor" in rows["supported compile backends"].split(", ")
    assert "cudagraphs" not in rows["supported compile backends"].split(", ")
    assert rows["a launch here would use"] == "eager (from ACCEL_COMPILE_BACKEND)"
    assert int(rows["device count"]) >= 1


def test_nproc_per_node_auto_means_the_logical_cpus_on_cpu(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nproc-per-node", "auto", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("ranks per node") == str(os.cpu_count())
    assert f"rank env {os.cpu_count() - 1}" in dict(result.plan())
