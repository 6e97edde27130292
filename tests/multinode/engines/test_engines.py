"""Multi-node jobs through the real engines this machine can run: two node launchers on loopback with
c10d, a hostfile over a real sshd, and a real OpenMPI mpirun."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, Launcher, Launch, clean_environ
from tests.multinode.engines.conftest import Sshd, free_port

ALLREDUCE = SCRIPTS / "allreduce_rank.py"
TRICKY_ARGS = ["two words", "it's \"quoted\"", "$HOME", "a;b && c", "back\\slash", "50%"]


def _node_launcher(rank: int, endpoint: str, record_dir: Path, extra: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "launcher", "--nnodes", "2", "--node-rank", str(rank), "--rdzv-endpoint", endpoint,
         "--rdzv-id", "loopback-test", "--rdzv-timeout", "60", "--nproc-per-node", "2", *extra, str(ALLREDUCE)],
        env=clean_environ({"RECORD_DIR": str(record_dir)}), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.timeout(180)
def test_two_node_launchers_on_loopback_run_one_four_rank_job(tmp_path: Path) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [_node_launcher(rank, endpoint, tmp_path, ["--compile-backend", "eager"]) for rank in (0, 1)]
    outputs = [node.communicate(timeout=170) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    records = Launch(0, "", "", tmp_path).records()
    assert sorted(records) == [0, 1, 2, 3]
    assert {record["sum"] for record in records.values()} == {1.0 + 2 + 3 + 4}
    assert {record["env"]["ACCEL_COMPILE_BACKEND"] for record in records.values()} == {"eager"}
    assert sorted((r["env"]["GROUP_RANK"], r["env"]["LOCAL_RANK"]) for r in records.values()) == [
        ("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]


@pytest.mark.timeout(180)
def test_a_node_with_a_different_backend_is_refused_naming_both(tmp_path: Path) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [_node_launcher(0, endpoint, tmp_path, ["--compile-backend", "eager"]),
             _node_launcher(1, endpoint, tmp_path, ["--compile-backend", "aot_eager"])]
    outputs = [node.communicate(timeout=170) for node in nodes]
    assert [node.returncode for node in nodes] == [2, 2], outputs
    for _, stderr in outputs:
        assert "the nodes resolved different compile backends" in stderr
        assert "'eager' (from --compile-backend)" in stderr and "'aot_eager' (from --compile-backend)" in stderr
        assert "Traceback" not in stderr
    assert Launch(0, "", "", tmp_path).records() == {}


@pytest.mark.timeout(120)
def test_a_rendezvous_peer_that_never_comes_gives_up_after_the_timeout(tmp_path: Path) -> None:
    node = subprocess.run(
        [sys.executable, "-m", "launcher", "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{free_port()}",
         "--rdzv-timeout", "5", str(ALLREDUCE)],
        env=clean_environ({"RECORD_DIR": str(tmp_path)}), capture_output=True, text=True, timeout=100,
    )
    assert node.returncode != 0
    assert "rendezvous" in node.stderr.lower() and "Traceback" not in node.stderr
    assert Launch(0, "", "", tmp_path).records() == {}


@pytest.mark.timeout(240)
def test_a_hostfile_job_over_real_ssh_passes_arguments_verbatim(launch: Launcher, tmp_path: Path,
                                                                  sshd: Sshd) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# two names for this machine, with different slot counts\nlocalhost slots=2\n\n"
                        "127.0.0.1 slots=1\n")
    result = launch(["--hostfile", str(hostfile), *sshd.flags, "--master-port", str(free_port()),
                     "--export", "RECORD_DIR", "--export", "EXPORTED", "--compile-backend", "eager",
                     str(ALLREDUCE), *TRICKY_ARGS], env={"EXPORTED": "it's $HOME; `x`"}, timeout=230)
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert sorted(records) == [0, 1, 2]
    for record in records.values():
        assert record["argv"] == TRICKY_ARGS
        assert record["sum"] == 6.0
        assert record["env"]["EXPORTED"] == "it's $HOME; `x`"
        assert record["env"]["ACCEL_COMPILE_BACKEND"] == "eager"
        assert record["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == "--compile-backend"
    by_node = sorted((r["env"]["GROUP_RANK"], r["env"]["LOCAL_RANK"]) for r in records.values())
    assert by_node in ([("0", "0"), ("0", "1"), ("1", "0")], [("0", "0"), ("1", "0"), ("1", "1")])


@pytest.mark.timeout(240)
def test_a_hostfile_job_through_a_real_mpirun(launch: Launcher, tmp_path: Path) -> None:
    if shutil.which("mpirun") is None:
        pytest.skip("needs Debian's openmpi-bin (installed by .ci/run)")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=2\n")
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_plm_rsh_agent": "false"}
    result = launch(["--hostfile", str(hostfile), "--launcher", "openmpi", "--master-port", str(free_port()),
                     "--export", "RECORD_DIR", "--compile-backend", "aot_eager", str(ALLREDUCE), *TRICKY_ARGS],
                    env=env, timeout=230)
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert sorted(records) == [0, 1]
    for record in records.values():
        assert record["argv"] == TRICKY_ARGS
        assert record["sum"] == 3.0
        assert record["env"]["ACCEL_COMPILE_BACKEND"] == "aot_eager"
    assert os.environ.get("OMPI_COMM_WORLD_RANK") is None


@pytest.mark.timeout(240)
def test_a_failing_rank_on_one_node_stops_the_job_on_every_node(launch: Launcher, tmp_path: Path,
                                                                 sshd: Sshd) -> None:
    import time

    import psutil

    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=1\n127.0.0.1 slots=1\n")
    script = SCRIPTS / "fail_on_last_rank.py"
    started = time.monotonic()
    result = launch(["--hostfile", str(hostfile), *sshd.flags, "--master-port", str(free_port()),
                     "--grace-period", "1", str(script), str(tmp_path)], timeout=230)
    elapsed = time.monotonic() - started
    assert result.returncode == 3, result.stderr
    assert "failed first, with exit code 3" in result.stderr
    assert "exited with status 3; every other node was stopped" in result.stderr
    assert elapsed < 50, f"took {elapsed:.1f} s: the sleeping rank was not stopped"
    marker = f"{script} {tmp_path}"
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert left == []


@pytest.mark.timeout(240)
def test_a_hostfile_job_through_a_real_pdsh(launch: Launcher, tmp_path: Path, sshd: Sshd) -> None:
    if shutil.which("pdsh") is None:
        pytest.skip("needs Debian's pdsh (installed by .ci/run)")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=2\n127.0.0.1 slots=1\n")
    # pdsh runs ssh itself; how to reach this sshd goes in pdsh's own variable.
    pairs = zip(sshd.flags[::2], sshd.flags[1::2])
    ssh_args = " ".join([f"-p {sshd.port}", *(f"-o {value}" for flag, value in pairs if flag == "--ssh-option")])
    result = launch(["--hostfile", str(hostfile), "--launcher", "pdsh", "--master-port", str(free_port()),
                     "--export", "RECORD_DIR", "--compile-backend", "eager", str(ALLREDUCE), *TRICKY_ARGS],
                    env={"PDSH_SSH_ARGS_APPEND": ssh_args}, timeout=230)
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert sorted(records) == [0, 1, 2]
    for record in records.values():
        assert record["argv"] == TRICKY_ARGS
        assert record["sum"] == 6.0
        assert record["env"]["ACCEL_COMPILE_BACKEND"] == "eager"
