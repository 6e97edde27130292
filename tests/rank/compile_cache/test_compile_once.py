"""Compile once per job (docs/CONTRACT.md section 7), for real: cold inductor caches, real ranks, real gloo, and
inductor's own counters to say which rank compiled a graph and which loaded it. The cache is the ranks' own, the same
on both launch paths: one path (tests/conftest.py, `launch_path`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import Launcher, clean_environ

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STEP = str(Path(__file__).resolve().parents[2] / "scripts" / "compiled_ddp_step.py")
RECORD_CXX = str(Path(__file__).resolve().parent / "record_cxx.sh")


CPUS = len(os.sched_getaffinity(0))


def test_two_ranks_of_one_node_compile_each_graph_once(launch: Launcher, tmp_path: Path) -> None:
    """... with the compile workers of the node's CPUs (one rank compiles while the other waits), and each graph
    kept in the compile folder by the rank that compiled it."""
    done = launch(["--compile-cache-dir", str(tmp_path / "kept"), "--nproc-per-node", "2", STEP],
                  env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=200)
    assert done.returncode == 0, done.stderr
    records = done.records()
    compiled = sorted(record["misses"] for record in records.values())
    assert compiled[0] == 0 and compiled[1] > 0, records  # one rank compiled, the other compiled nothing
    loader = next(record for record in records.values() if record["misses"] == 0)
    assert loader["hits"] == compiled[1]  # ... and loaded every graph the first compiled
    assert {record["env"]["ACCEL_COMPILE_CACHE_SECRET"] for record in records.values()} == {None}  # kept from the code
    assert {record["env"]["TORCHINDUCTOR_COMPILE_THREADS"] for record in records.values()} == {str(CPUS)}
    assert len(list((tmp_path / "kept" / "v1").iterdir())) >= compiled[1]  # the graphs, their AOTAutograd entries


def test_with_the_cache_off_every_rank_compiles_as_under_torch(launch: Launcher, tmp_path: Path) -> None:
    done = launch(["--compile-cache", "off", "--nproc-per-node", "2", STEP],
                  env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=200)
    assert done.returncode == 0, done.stderr
    assert [record["misses"] > 0 for record in done.records().values()] == [True, True]
    assert {record["env"]["TORCHINDUCTOR_COMPILE_THREADS"] for record in done.records().values()} == \
        {str(max(1, CPUS // 2))}  # every rank compiles: each its share


@pytest.mark.parametrize("meeting", ["static", "c10d"])
def test_a_second_node_with_its_own_cache_compiles_nothing_builds_nothing_twice_and_fetches_each_graph_once(
        tmp_path: Path, meeting: str) -> None:
    """Two nodes of two ranks on loopback, each node with a cold cache folder of its own (as two hosts have): static
    nodes on the direct path (rank 0's store carries the copies) with no secret set, signing with the user's key in
    the home they share, and nodes that meet at a c10d rendezvous on the engine path (the agent's store carries
    them), given one secret."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    nodes = []
    for node_rank in (0, 1):
        records = tmp_path / f"records-{node_rank}"
        records.mkdir()
        cache = str(tmp_path / f"cache-{node_rank}")
        env = clean_environ({"RECORD_DIR": str(records), "TORCHINDUCTOR_CACHE_DIR": cache,
                             "CXX": RECORD_CXX, "CXX_LOG": str(tmp_path / f"cxx-{node_rank}.log"),
                             "XDG_CONFIG_HOME": str(tmp_path / "home-config")})
        if meeting == "c10d":
            env["ACCEL_COMPILE_CACHE_SECRET"] = "a secret both nodes were given"
        where = (["--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port", port]
                 if meeting == "static" else ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"])
        nodes.append(subprocess.Popen(
            [sys.executable, "-m", "launcher", "--nnodes", "2", *where, "--rdzv-timeout", "60", "--nproc-per-node",
             "2", STEP],
            cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [node.communicate(timeout=200) for node in nodes]
    finally:  # a launcher stopped by SIGTERM stops its ranks: nothing of the test is left running
        for node in nodes:
            node.terminate()
            node.wait(timeout=60)
    assert [node.returncode for node in nodes] == [0, 0], outputs
    records = {node_rank: [json.loads(path.read_text()) for path in (tmp_path / f"records-{node_rank}").glob("*")]
               for node_rank in (0, 1)}
    misses = {node_rank: sum(record["misses"] for record in records[node_rank]) for node_rank in (0, 1)}
    builder = max(misses, key=lambda node_rank: misses[node_rank])
    loader = 1 - builder
    assert misses[loader] == 0 and misses[builder] > 0, records
    # One transfer per node: the loading node fetched each graph from the job once; its other rank loaded the
    # node's copy. The building node compiled each graph once and fetched nothing.
    graphs = misses[builder]
    assert sum(record["fetched_from_job"] for record in records[loader]) == graphs, records
    assert sum(record["loaded_from_node"] for record in records[loader]) == graphs, records
    assert sum(record["fetched_from_job"] for record in records[builder]) == 0, records
    assert sum(record["hits"] for record in records[builder]) == graphs, records
    built = {node_rank: _outputs(tmp_path / f"cxx-{node_rank}.log", tmp_path / f"cache-{node_rank}")
             for node_rank in (0, 1)}
    # Nothing was built twice in the job: not the graphs' kernels, which the loading node received, built, with
    # the graphs; not inductor's probes of the CPU's vector instructions, which every fresh cache folder builds
    # before its first key: the node that did not build one received it into its own cache folder.
    kernels = {library for library in built[builder] if ".main." in library}
    assert kernels and not built[loader] & kernels, built
    assert not built[0] & built[1], built
    for node_rank in (0, 1):
        assert all((tmp_path / f"cache-{node_rank}" / library).is_file() for library in built[1 - node_rank])
        fetched = sum(record["probes_fetched"] for record in records[node_rank])
        assert fetched == len(built[1 - node_rank] - kernels), (records, built)


def test_a_restart_on_an_emptied_node_and_the_next_job_on_fresh_nodes_compile_nothing(tmp_path: Path) -> None:
    """The compile folder outlives the job: an attempt after --max-restarts whose node lost its inductor cache (a
    replaced node) loads every graph from it (engine path), and so does the next job on two nodes with cold caches
    of their own, with no secret set (direct path): no graph compiled, no C++ compiler run."""
    kept = str(tmp_path / "kept")
    first = _run_nodes(tmp_path, "first", 1, ["--max-restarts", "1", "--compile-cache-dir", kept],
                       {"FAIL_FIRST_ATTEMPT": "1"})
    (record,) = first[0]
    assert record["attempt"] == "1" and record["misses"] == 0 and record["folder_loaded"] > 0, first
    assert record["aot_hits"] > 0, first  # the AOTAutograd entry came too: the graph was not traced again
    nodes = _run_nodes(tmp_path, "next", 2, ["--compile-cache-dir", kept], {})
    assert [sum(record["misses"] for record in records) for records in nodes] == [0, 0], nodes
    assert all(record["aot_hits"] > 0 for records in nodes for record in records), nodes
    assert not any(_outputs(tmp_path / f"cxx-next-{node}.log", tmp_path / f"cache-next-{node}") for node in (0, 1))


def test_a_node_replaced_in_a_restart_loads_every_graph_from_the_rendezvous_store_without_a_folder(
        tmp_path: Path) -> None:
    """Two nodes meeting at a c10d rendezvous, --max-restarts 1, no compile folder: node 1 loses its inductor cache
    and fails after its first step (a node replaced by a fresh one). Each attempt's rank 0 hosts a store of its own
    that dies with it, so the graphs are kept in the rendezvous's store, which the node agents host for the whole
    job: the fresh node's rank fetches every graph there and compiles none."""
    nodes = _run_nodes(tmp_path, "replaced", 2, ["--max-restarts", "1", "--rdzv-timeout", "60"], {},
                       node_extra=({}, {"FAIL_FIRST_ATTEMPT": "1"}), c10d=True)
    (first,), (replaced,) = nodes
    # torch counts an attempt per node: node 0's ranks, restarted for the new round, may still say 0
    assert replaced["attempt"] == "1" and replaced["misses"] == 0 and replaced["fetched_from_job"] > 0, nodes
    assert first["misses"] == 0, nodes  # node 0 kept its own cache: it loads from there


def test_a_node_that_joins_later_loads_every_graph_from_the_rendezvous_store_without_a_folder(
        tmp_path: Path) -> None:
    """An elastic job (--nnodes 1:2, c10d, no compile folder): node 0 runs alone and compiles; node 1 joins with an
    empty cache once node 0 stepped, and the agent restarts node 0's rank for the new round. The graphs node 0
    compiled are in the rendezvous's store: node 1's rank fetches both and compiles none."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    command = [sys.executable, "-m", "launcher", "--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
               f"127.0.0.1:{port}", "--rdzv-conf", "last_call_timeout=1", "--rdzv-timeout", "60", STEP]
    nodes = []
    try:
        for node in (0, 1):
            records = tmp_path / f"records-{node}"
            records.mkdir()
            env = clean_environ({"RECORD_DIR": str(records), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"cache-{node}"),
                                 "XDG_CONFIG_HOME": str(tmp_path / "home-config"), "WAIT_FOR_RANKS": "2"})
            nodes.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            while node == 0 and not any((tmp_path / "records-0").iterdir()):  # node 0 compiled and stepped alone
                assert nodes[0].poll() is None, nodes[0].communicate()
                time.sleep(0.2)
        outputs = [each.communicate(timeout=200) for each in nodes]
    finally:
        for each in nodes:
            each.terminate()
            each.wait(timeout=60)
    assert [each.returncode for each in nodes] == [0, 0], outputs
    (joined,) = [json.loads(path.read_text()) for path in (tmp_path / "records-1").glob("*")]
    assert joined["misses"] == 0 and joined["fetched_from_job"] > 0, (joined, outputs)


def _run_nodes(tmp_path: Path, name: str, count: int, flags: list[str], extra: dict[str, str],
               node_extra: tuple[dict[str, str], ...] = (), c10d: bool = False) -> list[list[dict]]:
    """`count` nodes of one rank each on loopback (one: a one-node launch), static (or meeting at a c10d
    rendezvous), each with a cold cache of its own and `extra` (node i also `node_extra[i]`): each node's records."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    nodes = []
    for node_rank in range(count):
        (tmp_path / f"records-{name}-{node_rank}").mkdir()
        env = clean_environ({"RECORD_DIR": str(tmp_path / f"records-{name}-{node_rank}"), **extra,
                             **(node_extra[node_rank] if node_rank < len(node_extra) else {}),
                             "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"cache-{name}-{node_rank}"), "CXX": RECORD_CXX,
                             "CXX_LOG": str(tmp_path / f"cxx-{name}-{node_rank}.log"),
                             "XDG_CONFIG_HOME": str(tmp_path / "home-config")})
        where = ["--nnodes", str(count), "--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port",
                 port] if count > 1 else []
        if c10d:
            where = ["--nnodes", str(count), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"]
        nodes.append(subprocess.Popen([sys.executable, "-m", "launcher", *where, *flags, STEP], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [node.communicate(timeout=200) for node in nodes]
    finally:
        for node in nodes:
            node.terminate()
            node.wait(timeout=60)
    assert [node.returncode for node in nodes] == [0] * count, outputs
    return [[json.loads(path.read_text()) for path in (tmp_path / f"records-{name}-{node_rank}").glob("*")]
            for node_rank in range(count)]


def _outputs(log: Path, cache: Path) -> set[str]:
    """What the C++ compiler wrote into `cache` (its -o files, relative), by the log record_cxx.sh keeps."""
    words = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    found = {run[index + 1] for run in words for index, word in enumerate(run[:-1]) if word == "-o"}
    return {str(Path(path).relative_to(cache)) for path in found if path.startswith(str(cache))}
