"""c10d rendezvous across two real hosts, one node launcher typed on each: `--rdzv-endpoint hosta:PORT`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, clean_environ
from tests.multinode.hosts.hosts import Cluster, Host

ALLREDUCE = SCRIPTS / "allreduce_rank.py"


def node_launcher(host: Host, endpoint: str, records: Path, timeout: int = 60, backend: str = "eager"
                  ) -> subprocess.Popen:
    """`accel-launch --nnodes 2 --nproc-per-node 2 --rdzv-endpoint ENDPOINT` typed on `host`."""
    argv = [sys.executable, "-m", "launcher", "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", endpoint,
            "--rdzv-id", "by-hand", "--rdzv-timeout", str(timeout), "--compile-backend", backend, str(ALLREDUCE)]
    return subprocess.Popen(host.argv(argv), env=clean_environ({"RECORD_DIR": str(records)}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.timeout(200)
def test_a_node_that_joins_late_still_makes_one_four_rank_job(cluster: Cluster, tmp_path: Path) -> None:
    hosta, hostb = cluster.hosts[:2]
    endpoint = f"{hosta.addr}:{cluster.next_port()}"
    first = node_launcher(hosta, endpoint, tmp_path)
    time.sleep(5)
    assert first.poll() is None, first.communicate()
    late = node_launcher(hostb, endpoint, tmp_path)
    outputs = [node.communicate(timeout=150) for node in (first, late)]
    assert [first.returncode, late.returncode] == [0, 0], outputs
    records = [json.loads(path.read_text()) for path in tmp_path.glob("rank-*.json")]
    assert sorted(record["env"]["RANK"] for record in records) == ["0", "1", "2", "3"]
    assert {record["sum"] for record in records} == {1.0 + 2 + 3 + 4}
    by_host = {(r["host"], r["env"]["LOCAL_RANK"]): r["env"]["GROUP_RANK"] for r in records}
    assert sorted(by_host) == [("hosta", "0"), ("hosta", "1"), ("hostb", "0"), ("hostb", "1")]
    assert by_host[("hosta", "0")] == by_host[("hosta", "1")] != by_host[("hostb", "0")] == by_host[("hostb", "1")]
    # Rank 0's node hosts the ranks' store: reached at its routable address, never at 127.0.0.1.
    assert {record["env"]["MASTER_ADDR"] for record in records} <= {hosta.addr, hostb.addr}
    assert len({record["env"]["MASTER_ADDR"] for record in records}) == 1
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(120)
def test_a_node_that_never_comes_ends_the_wait_after_the_timeout_in_one_line(cluster: Cluster,
                                                                              tmp_path: Path) -> None:
    hosta = cluster.hosts[0]
    started = time.monotonic()
    endpoint = f"{hosta.addr}:{cluster.next_port()}"
    alone = node_launcher(hosta, endpoint, tmp_path, timeout=5)
    _, stderr = alone.communicate(timeout=100)
    elapsed = time.monotonic() - started
    assert alone.returncode == 1, stderr
    message = (f"accel-launch: rendezvous failed: the nodes did not all come to {endpoint} within --rdzv-timeout"
               f" 5 s: 1 of 2 came (hosta at {hosta.addr}); 1 never did\n")
    assert message in stderr
    assert elapsed < 5 + 25, f"took {elapsed:.1f} s for a 5 s --rdzv-timeout"
    assert "Traceback" not in stderr
    assert list(tmp_path.glob("rank-*.json")) == []
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(200)
def test_nodes_on_two_hosts_that_resolved_different_backends_are_refused_naming_both_hosts(
        cluster: Cluster, tmp_path: Path) -> None:
    hosta, hostb = cluster.hosts[:2]
    endpoint = f"{hosta.addr}:{cluster.next_port()}"
    nodes = [node_launcher(hosta, endpoint, tmp_path), node_launcher(hostb, endpoint, tmp_path, backend="aot_eager")]
    outputs = [node.communicate(timeout=150) for node in nodes]
    assert [node.returncode for node in nodes] == [2, 2], outputs
    for _, stderr in outputs:
        assert "the nodes resolved different compile backends" in stderr
        assert "on hosta has 'eager' (from --compile-backend)" in stderr, stderr
        assert "on hostb has 'aot_eager' (from --compile-backend)" in stderr
    assert list(tmp_path.glob("rank-*.json")) == []
    assert cluster.wait_quiet() == {}
