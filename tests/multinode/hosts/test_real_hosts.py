"""Hostfile launches across two real hosts (own address, hostname and sshd each), started on hosta through
ssh, pdsh and OpenMPI's mpirun; the hosts' names resolve nowhere, as on many clusters' compute nodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.launches import SCRIPTS, clean_environ
from tests.multinode.hosts.hosts import Cluster

ALLREDUCE = SCRIPTS / "allreduce_rank.py"


def launch_on_a(cluster: Cluster, tmp_path: Path, args: list[str], env: dict[str, str] | None = None,
                timeout: float = 150) -> tuple[subprocess.CompletedProcess, dict[int, dict]]:
    """`accel-launch --hostfile` (hosta slots=2, hostb slots=1, by address) run on hosta; and the records."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host.addr} slots={slots}\n" for host, slots in zip(cluster.hosts, (2, 1))))
    records = tmp_path / "records"
    records.mkdir()
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--master-port", str(cluster.next_port()),
            "--rdzv-timeout", "60", "--export", "RECORD_DIR", *args]
    done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env=clean_environ({"RECORD_DIR": str(records), **(env or {})}))
    found = {int(path.stem.split("-")[1]): json.loads(path.read_text()) for path in records.glob("rank-*.json")}
    return done, found


def assert_one_job_across_both_hosts(cluster: Cluster, records: dict[int, dict]) -> None:
    """Three ranks, two on hosta and one on hostb, one all_reduce, the store on hosta's routable address."""
    hosta, hostb = cluster.hosts[:2]
    assert sorted(records) == [0, 1, 2]
    assert {record["sum"] for record in records.values()} == {1.0 + 2 + 3}
    layout = sorted((r["host"], r["env"]["GROUP_RANK"], r["env"]["LOCAL_RANK"], r["env"]["LOCAL_WORLD_SIZE"])
                    for r in records.values())
    assert layout == [("hosta", "0", "0", "2"), ("hosta", "0", "1", "2"), ("hostb", "1", "0", "1")]
    assert {record["env"]["MASTER_ADDR"] for record in records.values()} == {hosta.addr}
    assert {record["env"]["WORLD_SIZE"] for record in records.values()} == {"3"}
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(200)
def test_an_ssh_hostfile_launch_runs_one_job_across_two_hosts(cluster: Cluster, tmp_path: Path) -> None:
    done, records = launch_on_a(cluster, tmp_path, [*cluster.ssh_flags, "--compile-backend", "eager", str(ALLREDUCE)])
    assert done.returncode == 0, done.stderr
    assert_one_job_across_both_hosts(cluster, records)
    assert {record["env"]["ACCEL_COMPILE_BACKEND"] for record in records.values()} == {"eager"}


@pytest.mark.timeout(200)
def test_an_ssh_hostfile_launch_with_c10d_runs_one_job_across_four_hosts_one_rank_each(
        cluster: Cluster, tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host.addr} slots=1\n" for host in cluster.hosts))
    records = tmp_path / "records"
    records.mkdir()
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--rdzv-backend", "c10d",
            "--rdzv-timeout", "60", *cluster.ssh_flags, "--export", "RECORD_DIR", str(ALLREDUCE)]
    done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, capture_output=True, text=True, timeout=150,
                          env=clean_environ({"RECORD_DIR": str(records)}))
    assert done.returncode == 0, done.stderr
    found = [json.loads(path.read_text()) for path in records.glob("rank-*.json")]
    assert {record["sum"] for record in found} == {1.0 + 2 + 3 + 4}
    group_ranks = {r["host"]: r["env"]["GROUP_RANK"] for r in found}  # c10d numbers the later nodes as they come
    assert sorted(group_ranks) == ["hosta", "hostb", "hostc", "hostd"] and group_ranks["hosta"] == "0"
    assert sorted(group_ranks.values()) == ["0", "1", "2", "3"]
    assert {(r["env"]["LOCAL_WORLD_SIZE"], r["env"]["WORLD_SIZE"]) for r in found} == {("1", "4")}
    assert {record["env"]["MASTER_ADDR"] for record in found} == {cluster.hosts[0].addr}
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(200)
def test_a_pdsh_hostfile_launch_runs_one_job_across_two_hosts(cluster: Cluster, tmp_path: Path) -> None:
    done, records = launch_on_a(cluster, tmp_path, ["--launcher", "pdsh", str(ALLREDUCE)],
                                env={"PDSH_SSH_ARGS_APPEND": cluster.ssh_args})
    assert done.returncode == 0, done.stderr
    assert_one_job_across_both_hosts(cluster, records)


@pytest.mark.timeout(200)
def test_an_mpirun_hostfile_launch_runs_one_job_across_two_hosts(cluster: Cluster, tmp_path: Path) -> None:
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_plm_rsh_agent": "ssh",
           "OMPI_MCA_plm_rsh_args": cluster.ssh_args}
    done, records = launch_on_a(cluster, tmp_path, ["--launcher", "openmpi", str(ALLREDUCE)], env=env)
    assert done.returncode == 0, done.stderr
    assert_one_job_across_both_hosts(cluster, records)


@pytest.mark.timeout(200)
def test_a_failing_rank_on_hostb_stops_hosta_and_is_named_with_its_host(cluster: Cluster, tmp_path: Path) -> None:
    started = time.monotonic()
    done, _ = launch_on_a(cluster, tmp_path, [*cluster.ssh_flags, "--grace-period", "1",
                                              str(SCRIPTS / "fail_on_last_rank.py")])
    elapsed = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert "rank 2 on hostb failed first, with exit code 3" in done.stderr
    assert f"the node launcher on {cluster.hosts[1].addr} exited with status 3" in done.stderr
    assert elapsed < 50, f"took {elapsed:.1f} s: the sleeping ranks on hosta were not stopped"
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(200)
def test_an_unreachable_host_stops_the_job_naming_that_host(cluster: Cluster, tmp_path: Path) -> None:
    """hostb's address is replaced by one nobody holds (198.18.7.9): ssh gives up, hosta's launcher is stopped."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"{cluster.hosts[0].addr} slots=1\n198.18.7.9 slots=1\n")
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--master-port", str(cluster.next_port()),
            *cluster.ssh_flags, "--ssh-option", "ConnectTimeout=3", "--grace-period", "1",
            str(SCRIPTS / "fail_on_last_rank.py")]
    started = time.monotonic()
    done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, capture_output=True, text=True, timeout=150,
                          env=clean_environ())
    elapsed = time.monotonic() - started
    assert done.returncode == 255, done.stderr
    assert "the node launcher on 198.18.7.9 exited with status 255; every other node was stopped" in done.stderr
    assert elapsed < 60, f"took {elapsed:.1f} s: the launcher on hosta was not stopped"
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(200)
def test_a_killed_node_launcher_on_hostb_stops_the_job_on_both_hosts(cluster: Cluster, tmp_path: Path) -> None:
    hosta, hostb = cluster.hosts[:2]
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"{hosta.addr} slots=1\n{hostb.addr} slots=1\n")
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--master-port", str(cluster.next_port()),
            *cluster.ssh_flags, "--grace-period", "1", "--export", "RECORD_DIR", str(SCRIPTS / "start_then_sleep.py")]
    head = subprocess.Popen(hosta.argv(argv), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=clean_environ({"RECORD_DIR": str(tmp_path)}))
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("started-*"))) < 2:
        assert time.monotonic() < deadline and head.poll() is None, head.communicate()
        time.sleep(0.5)
    launcher = [process for process in map(psutil.Process, hostb.pids())
                if "launcher.node" in process.cmdline() and "--stop-on-stdin-eof" in process.cmdline()]
    assert len(launcher) == 1
    killed = time.monotonic()
    launcher[0].kill()
    _, stderr = head.communicate(timeout=60)
    assert head.returncode == 128 + 9 or head.returncode == 255, stderr
    assert f"the node launcher on {hostb.addr} exited with status" in stderr
    assert time.monotonic() - killed < 30
    assert cluster.wait_quiet() == {}
