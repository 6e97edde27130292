"""Two nodes on loopback: one node's launcher SIGKILLed mid-collective, and a node that joins late.

Node 0 starts first, so that it hosts the rendezvous store; node 1's launcher is the one killed.
(A node that never comes: tests/multinode/engines/test_engines.py::
test_a_rendezvous_peer_that_never_comes_gives_up_after_the_timeout.)
"""

from __future__ import annotations

import signal
import socket
import time

import pytest

from .jobs import script, wait_gone

LOOP = script("collective_loop.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def two_nodes(start_job, tmp_path, nnodes: str, extra: list[str], env: dict[str, str], late: float | None = None):
    """Start node 0, then node 1: 3 s later (both launchers start up side by side, node 0 ahead, so that it
    hosts the rendezvous store), or `late` s after node 0 hosts the store and waits there. One record folder."""
    records = tmp_path / "records"
    records.mkdir()
    port = free_port()
    flags = ["--nnodes", nnodes, "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"n{free_port()}",
             "--grace-period", "1", *extra]
    env = {**env, "RECORD_DIR": str(records)}
    first = start_job([*flags, LOOP], env)
    if late is None:
        time.sleep(3)
    else:
        wait_listening(port, first)
        time.sleep(late)
    second = start_job([*flags, LOOP], env)
    return first, second, records


def wait_listening(port: int, job, timeout: float = 120) -> None:
    """Wait until the rendezvous store of `job` (node 0) accepts connections on `port`."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert job.proc.poll() is None, job.output()[1]
        assert time.monotonic() < deadline, "node 0 did not open its rendezvous store"
        time.sleep(0.1)


def wait_records(records, count: int, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while len([p for p in records.glob("started-*") if not p.name.endswith(".tmp")]) < count:
        assert time.monotonic() < deadline, "the ranks of both nodes did not start"
        time.sleep(0.1)


@pytest.mark.timeout(240)
def test_a_sigkilled_node_ends_the_survivor_within_30_s_naming_the_lost_node(start_job, figures, tmp_path):
    survivor, lost, records = two_nodes(start_job, tmp_path, "2", [], {})
    wait_records(records, 2)
    killed = lost.send(signal.SIGKILL)
    finished = survivor.finish(since=killed)

    assert finished.returncode != 0, finished.stderr
    assert finished.seconds < 30
    ours = [line for line in finished.stderr.splitlines() if line.startswith(("accel-launch: ", "  it lost"))]
    assert any("127.0.0.1" in line for line in ours), finished.stderr
    assert wait_gone(survivor.marker, timeout=10) == [] and wait_gone(lost.marker, timeout=10) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(300)
def test_with_a_node_range_and_restarts_the_survivor_continues_alone(start_job, figures, tmp_path):
    # The survivor's second rendezvous waits until the lost node counts as dead (no heartbeat for 3 keep-alive
    # intervals: 15 s by default, 3 s here), then torch's last call for more nodes (30 s by default; 10 s is
    # plenty for node 1, started 3 s after node 0, to join the first rendezvous).
    survivor, lost, records = two_nodes(start_job, tmp_path, "1:2", [
        "--max-restarts", "1", "--rdzv-conf", "last_call_timeout=10,keep_alive_interval=1"], {})
    wait_records(records, 2)
    killed = lost.send(signal.SIGKILL)
    finished = survivor.finish(timeout=200, since=killed)

    assert finished.returncode == 0, finished.stderr
    facts = (records / "started-0").read_text()
    assert "world=1" in facts and "attempt=1" in facts, facts
    assert wait_gone(survivor.marker, timeout=10) == [] and wait_gone(lost.marker, timeout=10) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
def test_a_restart_that_cannot_meet_its_lost_peer_fails_within_the_rendezvous_timeout(start_job, figures, tmp_path):
    survivor, lost, records = two_nodes(start_job, tmp_path, "2", ["--max-restarts", "1", "--rdzv-timeout", "10"], {})
    wait_records(records, 2)
    killed = lost.send(signal.SIGKILL)
    finished = survivor.finish(since=killed)

    assert finished.returncode == 1, finished.stderr
    assert finished.seconds < 10 + 15
    ours = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: ")]
    assert ours[-1].startswith("accel-launch: rendezvous failed: the nodes did not all come to 127.0.0.1:"), (
        finished.stderr)
    assert ours[-1].endswith("never did")
    assert "Traceback" not in "\n".join(line for line in finished.stderr.splitlines() if not line.startswith("[rank"))
    assert wait_gone(survivor.marker, timeout=10) == [] and wait_gone(lost.marker, timeout=10) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
def test_a_node_that_joins_late_within_the_rendezvous_timeout_runs_the_job(start_job, figures, tmp_path):
    # Late: node 0 has been waiting at the rendezvous (its store up) for 2 s when node 1 starts, and waits on
    # while node 1 starts up.
    first, late, records = two_nodes(start_job, tmp_path, "2", ["--rdzv-timeout", "120"], {"LOOP_SECONDS": "2"},
                                     late=2)
    results = [first.finish(), late.finish()]

    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert sorted(p.name for p in records.glob("started-*")) == ["started-0", "started-1"]
    figures(status=0, seconds=max(r.seconds for r in results))
