"""The direct path of several nodes (docs/ARCHITECTURE.md, "Two paths"): node launchers in torchrun's static form
(`--nnodes 2 --node-rank R --master-addr 127.0.0.1 --master-port P`) on loopback start their ranks without torch,
give them torchrun's environment variable by variable (torchrun beside), and stop every rank of every node, each
with the one line, when the nodes resolved different backends or run another Python; a lost node ends the other.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import SCRIPTS

from .jobs import script
from .test_direct_path import WATCHED_LAUNCHER

ALLREDUCE = str(SCRIPTS / "allreduce_rank.py")
ENV_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def static_form(node_rank: int, port: int, *extra: str) -> list[str]:
    return ["--nnodes", "2", "--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port", str(port),
            "--nproc-per-node", "2", *extra]


def two_nodes(start_job, args0: list[str], args1: list[str], env1: dict[str, str] | None = None, **kwargs):
    port = free_port()
    first = start_job([*static_form(0, port), *args0], {"ACCEL_LAUNCH_PATH": "auto"}, **kwargs)
    second = start_job([*static_form(1, port), *args1], {"ACCEL_LAUNCH_PATH": "auto", **(env1 or {})}, **kwargs)
    return first, second


def records(*record_dirs: Path) -> dict[int, dict]:
    found = {}
    for folder in record_dirs:
        for path in folder.glob("rank-*.json"):
            found[int(path.stem.split("-")[1])] = json.loads(path.read_text())
    return found


def torchrun_records(tmp_path: Path) -> dict[int, dict]:
    """The same job under two torchrun node launchers."""
    port, folder = free_port(), tmp_path / "torchrun"
    folder.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCEL_")}
    env["RECORD_DIR"] = str(folder)
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    nodes = [subprocess.Popen([torchrun, *static_form(rank, port), ALLREDUCE], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for rank in (0, 1)]
    assert [node.wait(timeout=120) for node in nodes] == [0, 0]
    return records(folder)


@pytest.mark.timeout(240)
def test_two_node_launchers_start_their_ranks_without_torch_with_torchruns_environment(start_job, figures, tmp_path):
    # A cold backend cache is built once by importing dynamo (README, "Speed"); a dry run builds it first.
    assert start_job(["--dry-run", ALLREDUCE]).finish().returncode == 0
    first, second = two_nodes(start_job, [ALLREDUCE], [ALLREDUCE], command=WATCHED_LAUNCHER)
    done = [first.finish(), second.finish()]

    assert [finished.returncode for finished in done] == [0, 0], [finished.stderr for finished in done]
    ours = records(first.record_dir, second.record_dir)
    assert sorted(ours) == [0, 1, 2, 3] and {record["sum"] for record in ours.values()} == {10.0}
    assert not (first.record_dir / "launcher-imported-torch").exists()
    assert not (second.record_dir / "launcher-imported-torch").exists()
    theirs = torchrun_records(tmp_path)
    assert {rank: {key: record["env"][key] for key in ENV_KEYS} for rank, record in ours.items()} == \
           {rank: {key: record["env"][key] for key in ENV_KEYS} for rank, record in theirs.items()}
    figures(seconds=max(finished.seconds for finished in done))


def _one_line_each(done, fragment: str) -> None:
    for finished in done:
        assert finished.returncode == 2, finished.stderr
        lines = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
        assert len(lines) == 1 and fragment in lines[0], finished.stderr
        assert "Traceback" not in finished.stderr


@pytest.mark.timeout(240)
def test_nodes_that_resolved_different_backends_both_exit_2_with_the_one_line(start_job, figures):
    first, second = two_nodes(start_job, ["--compile-backend", "eager", ALLREDUCE],
                              ["--compile-backend", "aot_eager", ALLREDUCE])
    done = [first.finish(), second.finish()]

    _one_line_each(done, "the nodes resolved different compile backends: rank 0 on ")
    for finished in done:
        assert "'eager' (from --compile-backend)" in finished.stderr
        assert "'aot_eager' (from --compile-backend)" in finished.stderr
    assert records(first.record_dir, second.record_dir) == {}  # no init_process_group returned
    figures(seconds=max(finished.seconds for finished in done))


@pytest.mark.timeout(240)
def test_a_node_on_another_python_stops_both_with_the_one_line(start_job, figures, tmp_path):
    # The one seam: node 1's processes report another Python version (a sitecustomize on its PYTHONPATH).
    seam = tmp_path / "seam"
    seam.mkdir()
    (seam / "sitecustomize.py").write_text("import platform\nplatform.python_version = lambda: '3.99.0'\n")
    first, second = two_nodes(start_job, [ALLREDUCE], [ALLREDUCE], {"PYTHONPATH": str(seam)})
    done = [first.finish(), second.finish()]

    _one_line_each(done, "the nodes run different Python: rank 0 on ")
    assert all("'3.99.0'" in finished.stderr for finished in done)
    figures(seconds=max(finished.seconds for finished in done))


@pytest.mark.timeout(240)
def test_a_lost_node_ends_the_other_within_30_s(start_job, figures):
    loop = script("collective_loop.py")
    survivor, lost = two_nodes(start_job, [loop], [loop])
    survivor.wait_started(2)
    lost.wait_started(2)
    killed = lost.send(signal.SIGKILL)
    finished = survivor.finish(since=killed)

    assert finished.returncode != 0, finished.stderr
    assert finished.seconds < 30
    figures(status=finished.returncode, seconds=finished.seconds)
