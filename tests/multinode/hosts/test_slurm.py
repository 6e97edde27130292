"""accel-launch under a real two-node Slurm cluster (slurmctld, a slurmd per host, munge): the sbatch
example, `--launcher slurm` through a real srun, and scancel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, clean_environ
from tests.multinode.hosts.hosts import Cluster
from tests.multinode.hosts.slurm_cluster import Slurm

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "slurm_job.sbatch"


def client_env(slurm: Slurm, records: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """What a user's shell on hosta has: the venv's accel-launch on PATH, the cluster's SLURM_CONF."""
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return clean_environ({**slurm.env, "PATH": path, "RECORD_DIR": str(records), **(extra or {})})


def read_records(records: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in records.glob("rank-*.json")]


def assert_four_ranks_on_two_nodes(records: list[dict], master: str) -> None:
    assert sorted(record["env"]["RANK"] for record in records) == ["0", "1", "2", "3"]
    assert {record["sum"] for record in records} == {1.0 + 2 + 3 + 4}
    layout = sorted((r["host"], r["env"]["LOCAL_RANK"], r["env"]["WORLD_SIZE"]) for r in records)
    assert layout == [("hosta", "0", "4"), ("hosta", "1", "4"), ("hostb", "0", "4"), ("hostb", "1", "4")]
    group = {(r["host"], r["env"]["GROUP_RANK"]) for r in records}
    assert len(group) == 2 and {rank for _, rank in group} == {"0", "1"}
    assert {record["env"]["MASTER_ADDR"] for record in records} == {master}


def wait_for_no_jobs(cluster: Cluster, slurm: Slurm, seconds: float = 30) -> str:
    """Wait until squeue lists no job; return its last listing."""
    deadline = time.monotonic() + seconds
    while True:
        listing = subprocess.run(cluster.hosts[0].argv(["squeue", "-h"]), capture_output=True, text=True,
                                 env={**os.environ, **slurm.env}).stdout
        if not listing.strip() or time.monotonic() > deadline:
            return listing
        time.sleep(0.5)


@pytest.mark.timeout(240)
def test_the_sbatch_example_runs_one_job_on_both_nodes_from_slurms_variables(cluster: Cluster, slurm: Slurm,
                                                                              tmp_path: Path) -> None:
    env = client_env(slurm, tmp_path, {"NPROC_PER_NODE": "2", "ACCEL_COMPILE_BACKEND": "eager"})
    done = subprocess.run(cluster.hosts[0].argv(["sbatch", "--wait", f"--output={tmp_path / 'job.out'}",
                                                 str(EXAMPLE), str(SCRIPTS / "allreduce_rank.py")]),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=220)
    output = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert done.returncode == 0, done.stderr + output
    records = read_records(tmp_path)
    assert_four_ranks_on_two_nodes(records, "hosta")
    assert {record["env"]["ACCEL_COMPILE_BACKEND"] for record in records} == {"eager"}
    assert wait_for_no_jobs(cluster, slurm) == ""
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(240)
def test_a_slurm_hostfile_launch_starts_the_node_launchers_through_a_real_srun(cluster: Cluster, slurm: Slurm,
                                                                               tmp_path: Path) -> None:
    (tmp_path / "hostfile").write_text("hosta slots=2\nhostb slots=2\n")
    argv = [sys.executable, "-m", "launcher", "--hostfile", "hostfile", "--launcher", "slurm",
            "--master-port", str(cluster.next_port()), "--export", "RECORD_DIR", str(SCRIPTS / "allreduce_rank.py")]
    done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, env=client_env(slurm, tmp_path),
                          capture_output=True, text=True, timeout=220)
    assert done.returncode == 0, done.stderr
    assert_four_ranks_on_two_nodes(read_records(tmp_path), "hosta")
    assert wait_for_no_jobs(cluster, slurm) == ""
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(240)
def test_scancel_stops_every_rank_on_every_node(cluster: Cluster, slurm: Slurm, tmp_path: Path) -> None:
    env = client_env(slurm, tmp_path, {"NPROC_PER_NODE": "2"})
    submitted = subprocess.run(cluster.hosts[0].argv(["sbatch", "--parsable", f"--output={tmp_path / 'job.out'}",
                                                      str(EXAMPLE), str(SCRIPTS / "start_then_sleep.py")]),
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30, check=True)
    job = submitted.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("started-*"))) < 4:
        assert time.monotonic() < deadline, (tmp_path / "job.out").read_text()
        time.sleep(0.5)
    assert sorted(path.read_text() for path in tmp_path.glob("started-*")) == ["hosta", "hosta", "hostb", "hostb"]
    subprocess.run(cluster.hosts[0].argv(["scancel", job]), env=env, check=True, timeout=30)
    assert wait_for_no_jobs(cluster, slurm) == ""
    assert cluster.wait_quiet() == {}
