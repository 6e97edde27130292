"""`accel-launch status [PID]`: one row per rank of the job it finds (as `stacks` finds one), the odd ones first,
one line and exit 2 when there is none (the job itself is faked at the process scan: its ranks are this process,
their progress files written by the rank's own writer). On a node of two, the other node's rows come from a real
TCPStore, shown only when the job signed them; a store gone or silent costs seconds and one line."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from torch.distributed import TCPStore

from launcher.contract.names import COMPILE_SECRET_VAR, PROGRESS_FILE
from launcher.rank.node_summary import signed_summary, summary_key
from launcher.rank.progress import _Progress
from launcher.rank.rank_facts import RankLooks
from launcher.run.stacks import find_job
from launcher.run.stacks.find_job import RunningJob
from launcher.run.watch.node_rows import OtherNodes


def progress(folder: Path, rank: int, steps: int) -> None:
    record = _Progress(os.open(folder / PROGRESS_FILE.format(rank=rank), os.O_RDWR | os.O_CREAT, 0o600))
    for _ in range(steps):
        record.stepped(None, (), {})


def test_without_a_job_it_says_so_in_one_line_with_exit_2(cli, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(find_job, "running_jobs", lambda: [])
    result = cli(["status"])

    assert result.status == 2
    assert result.stderr == "accel-launch status: error: no accel-launch job of yours is running on this host\n"


@pytest.mark.parametrize(("pid", "told"), [
    (None, "2 accel-launch jobs of yours run here; give one's pid (accel-launch status PID): 101 (1 rank: "),
    ("1", "process 1 has no ranks of yours running that answer: give the pid of a running accel-launch "
          "(accel-launch status without a pid lists the jobs here)"),
])
def test_what_to_type_names_status(cli, monkeypatch: pytest.MonkeyPatch, pid: str | None, told: str):
    found = [RunningJob(launcher, "accel-launch train.py", Path("/nowhere"), {0: 1}) for launcher in (101, 202)]
    monkeypatch.setattr(find_job, "running_jobs", lambda: found)
    result = cli(["status", *([pid] if pid else [])])

    assert result.status == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"accel-launch status: error: {told}"), result.stderr


def test_each_rank_is_one_row_and_the_odd_one_comes_first(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for rank, steps in ((0, 7), (1, 0), (2, 7)):
        progress(tmp_path, rank, steps)
    ranks = dict.fromkeys((0, 1, 2), os.getpid())
    monkeypatch.setattr(find_job, "running_jobs", lambda: [RunningJob(4242, "accel-launch train.py", tmp_path, ranks)])
    result = cli(["status", "4242"])

    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("accel-launch status: job 4242 on ") and "3 rank(s): accel-launch train.py" in lines[0]
    columns = [re.split(r"\s{2,}", line) for line in lines[1:]]
    assert columns[0] == ["rank", "host", "pid", "phase", "steps", "s/step", "work %", "last step", "cpu %", "memory"]
    assert [row[0] for row in columns[1:]] == ["1", "0", "2"]
    assert [row[3:5] for row in columns[1:]] == [["importing (odd)", "0"], ["training", "7"], ["training", "7"]]
    assert all(row[-1].endswith(" MiB") for row in columns[1:])


SECRET = "a-secret-of-this-job-0123456789"


@pytest.fixture
def node_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Node 1 of 2 as `status` finds it: one rank (a real process with a rank's environment) whose store is the
    port given; the job is faked at the process scan as above."""
    children = []

    def start(port: int, secret: str = SECRET) -> subprocess.Popen:
        env = {**os.environ, "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), COMPILE_SECRET_VAR: secret}
        child = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(120)"], env=env,
                                 stdout=subprocess.PIPE)
        children.append(child)
        child.stdout.readline()  # its exec is done: until then /proc/PID/environ can read empty
        progress(tmp_path, 1, 3)
        job = RunningJob(4242, "accel-launch train.py", tmp_path, {1: child.pid})
        monkeypatch.setattr(find_job, "running_jobs", lambda: [job])
        return child

    yield start
    for child in children:
        child.kill()
        child.communicate()


@pytest.fixture
def store() -> TCPStore:
    return TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False)


def node_zero_record(tmp_path: Path, secret: str = SECRET) -> bytes:
    """Node 0's record of its one rank, rank 0 on hosta, 5 steps, as its publisher signs it."""
    progress(tmp_path / "node0", 0, 5)
    facts = RankLooks(str(tmp_path / "node0"), "hosta").take({0: os.getpid()})
    return signed_summary(os.fsencode(secret), 0, "hosta", facts)


def rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by rank."""
    return {row[0]: row for row in (re.split(r"\s{2,}", line) for line in stdout.splitlines()[1:]) if row[0].isdigit()}


def test_another_nodes_signed_rows_are_shown_with_its_host(cli, node_one, store, tmp_path: Path):
    (tmp_path / "node0").mkdir()
    node_one(store.port)
    store.set(summary_key(os.fsencode(SECRET), 0), node_zero_record(tmp_path))
    result = cli(["status", "4242"])

    assert result.status == 0, result.stderr
    assert "2 rank(s) on 2 of 2 nodes: accel-launch train.py" in result.stdout.splitlines()[0]
    shown = rows(result.stdout)
    assert sorted(shown) == ["0", "1"]
    assert shown["0"][1:5] == ["hosta", str(os.getpid()), "training", "5"] and shown["1"][3:5] == ["training", "3"]


@pytest.mark.parametrize("record", ["unsigned", "another secret", "another node's"])
def test_a_record_the_job_did_not_sign_for_that_node_is_not_shown_and_said(cli, node_one, store, tmp_path: Path,
                                                                            record: str):
    (tmp_path / "node0").mkdir()
    node_one(store.port)
    signed = node_zero_record(tmp_path, "another-secret-0123456789abcdef" if record == "another secret" else SECRET)
    if record == "unsigned":
        signed = signed.rpartition(b" ")[0] + b" " + b"0" * 64
    key = summary_key(os.fsencode(SECRET), 0)
    if record == "another node's":  # a real record of node 0, copied to node 1's key, read as node 0's
        store.set(summary_key(os.fsencode(SECRET), 1), signed)
        signed = signed.replace(b'"hosta"', b'"hostb"')
    store.set(key, signed)
    result = cli(["status", "4242"])

    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "1 rank(s) on 1 of 2 nodes" in lines[0]
    assert lines[1] == "accel-launch status: not shown: node 0: its record is not signed with this job's secret"
    assert sorted(rows(result.stdout)) == ["1"]


@pytest.mark.parametrize("store_is", ["gone", "silent"])
def test_a_store_gone_or_silent_shows_this_nodes_rows_and_one_line_within_seconds(cli, node_one, store_is: str):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        if store_is == "silent":
            listener.listen()  # connections wait in the backlog: nothing ever answers
        port = listener.getsockname()[1]
        node_one(port)
        started = time.monotonic()
        result = cli(["status", "4242"])
        took = time.monotonic() - started

    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "1 rank(s) on 1 of 2 nodes" in lines[0]
    why = "was not reached within 2 s" if store_is == "gone" else "did not answer within 5 s"
    assert lines[1] == ("accel-launch status: the other nodes' rows are not shown: the job's store at "
                        f"127.0.0.1:{port} {why}")
    assert sorted(rows(result.stdout)) == ["1"]
    assert took < 15, took


def test_a_rank_whose_environment_reads_empty_is_passed_over_for_one_that_reads(node_one, store):
    # Rank 0 is a process without a rank's environment, as a rank still in its exec reads (/proc/PID/environ
    # empty): the job's layout comes from rank 1's.
    child = node_one(store.port)
    job = RunningJob(4242, "accel-launch train.py", Path("/nowhere"), {0: os.getpid(), 1: child.pid})
    assert "WORLD_SIZE" not in os.environ

    assert OtherNodes(job).nodes == 2


def test_a_node_of_a_job_without_a_secret_says_why_the_others_are_not_shown(cli, node_one, store):
    node_one(store.port, secret="")
    result = cli(["status", "4242"])

    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[1] == ("accel-launch status: the other nodes' rows are not shown: the job's "
                                             "ranks hold no secret to sign them (--compile-cache off or node)")
