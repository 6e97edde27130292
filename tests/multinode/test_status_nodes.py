"""`accel-launch status` on a job of two nodes (docs/CONTRACT.md section 9): two node launchers on loopback
(`--nnodes 2 --node-rank 0/1 --master-addr 127.0.0.1 --master-port P`), a DDP script stepping. Given node 1's
launcher, status shows node 0's ranks too, as node 0's local rank 0 published them in the job's store, on both
paths (the direct path's store is rank 0's, the engine's is node 0's agent's). With the store stopped (its host,
rank 0, SIGSTOPped: the port takes connections and nothing answers), node 1's ranks and one line, within seconds.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.faults.jobs import Job, script

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("launch_path")]

DDP = script("watch_ddp.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[Job]]:
    """Node 0 and node 1 of one job, stepping without end (every process killed at the test's end)."""
    port = free_port()
    jobs = []
    for node in (0, 1):
        workdir = tmp_path / f"node{node}"
        workdir.mkdir()
        jobs.append(Job(["--nnodes", "2", "--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port",
                         str(port), "--nproc-per-node", "2", DDP], workdir, {"WATCH_STEPS": "100000"},
                        (sys.executable, "-m", "launcher")))
    yield jobs
    for job in jobs:
        job.close()


def ranks_of(job: Job) -> dict[int, int]:
    """The launcher's ranks: global rank -> pid."""
    found = {}
    for child in psutil.Process(job.pid).children():
        environ = child.environ()
        if "launcher.rank.bootstrap" in child.cmdline() and environ.get("RANK", "").isdigit():
            found[int(environ["RANK"])] = child.pid
    return found


def wait_stepping(job: Job, ranks: tuple[int, ...]) -> None:
    deadline = time.monotonic() + 150
    while not all((job.record_dir / f"steps-{rank}").exists() for rank in ranks):
        assert job.proc.poll() is None and time.monotonic() < deadline, job.output()[1]
        time.sleep(0.2)


def status(job: Job) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    shown = subprocess.run([sys.executable, "-m", "launcher", "status", str(job.pid)], cwd=job.workdir,
                           capture_output=True, text=True, timeout=60)
    return shown, time.monotonic() - started


def rows(stdout: str) -> dict[int, list[str]]:
    return {int(row[0]): row for row in (re.split(r"\s{2,}", line) for line in stdout.splitlines()[1:])
            if row[0].isdigit()}


@pytest.mark.timeout(300)
def test_status_on_node_1_shows_node_0s_ranks_from_the_jobs_store(nodes: list[Job]) -> None:
    first, second = nodes
    wait_stepping(first, (0, 1))
    wait_stepping(second, (2, 3))
    pids = {**ranks_of(first), **ranks_of(second)}
    deadline = time.monotonic() + 30  # node 0's first record is written as its rank 0's init_process_group returns
    while True:
        shown, _ = status(second)
        if len(rows(shown.stdout)) == 4 or time.monotonic() > deadline:
            break

    assert shown.returncode == 0, shown.stderr
    header = shown.stdout.splitlines()[0]
    assert f"job {second.pid} on " in header and ", 4 rank(s) on 2 of 2 nodes: " in header, shown.stdout
    table = rows(shown.stdout)
    assert {rank: int(row[2]) for rank, row in table.items()} == pids, shown.stdout
    assert {row[1] for row in table.values()} == {socket.getfqdn()}
    assert all(row[3].startswith(("training", "waiting")) and int(row[4]) > 0 for row in table.values()), shown.stdout


@pytest.mark.timeout(300)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)
def test_with_the_store_stopped_status_shows_this_nodes_ranks_and_one_line_within_seconds(nodes: list[Job]) -> None:
    first, second = nodes
    wait_stepping(first, (0, 1))
    wait_stepping(second, (2, 3))
    store_host = ranks_of(first)[0]
    os.kill(store_host, signal.SIGSTOP)
    try:
        shown, took = status(second)
    finally:
        os.kill(store_host, signal.SIGCONT)

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert ", 2 rank(s) on 1 of 2 nodes: " in lines[0], shown.stdout
    assert re.fullmatch(r"accel-launch status: the other nodes' rows are not shown: the job's store at "
                        r"127\.0\.0\.1:\d+ did not answer within 5 s", lines[1]), shown.stdout
    assert sorted(rows(shown.stdout)) == [2, 3]
    assert took < 30, took
