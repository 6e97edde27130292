"""The compile-backend agreement between two real node launchers' c10d rendezvous on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from launcher.contract.resolved_backend import BackendClaim
from launcher.run.engine.rendezvous.backend_agreement import disagreement

PEER = Path(__file__).with_name("rdzv_peer.py")
ROOT = Path(__file__).resolve().parents[4]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_two_nodes(tmp_path: Path, backends: tuple[str, str], hosting: str) -> list[tuple[int, dict]]:
    """Start two peers; `hosting` is "test" (this process hosts the store) or "auto" (a peer does)."""
    from torch.distributed import TCPStore

    if hosting == "test":
        server = TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, wait_for_workers=False)
        port, is_host = server.port, "false"
    else:
        port, is_host = free_port(), "auto"
    run_id = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    peers = []
    for index, backend in enumerate(backends):
        out = tmp_path / f"node{index}.json"
        argv = [sys.executable, str(PEER), f"127.0.0.1:{port}", run_id, backend, f"host{index}", is_host, str(out)]
        peers.append((subprocess.Popen(argv, env=env, cwd=ROOT), out))
    results = []
    for process, out in peers:
        status = process.wait(timeout=90)
        results.append((status, json.loads(out.read_text())))
    return results


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_nodes_with_the_same_backend_complete_the_rendezvous(tmp_path: Path) -> None:
    # The test hosts the store: in a real job the node launchers stay, here the peers exit at once.
    results = run_two_nodes(tmp_path, ("inductor", "inductor"), "test")
    assert [status for status, _ in results] == [0, 0]
    assert sorted(result["rank"] for _, result in results) == [0, 1]
    assert {(result["world_size"], result["backend"]) for _, result in results} == {(2, "accel-c10d")}


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("hosting", ["test", "auto"])  # auto: a failing peer hosts the store, as in a real job
def test_two_nodes_with_different_backends_both_fail_naming_both(tmp_path: Path, hosting: str) -> None:
    results = run_two_nodes(tmp_path, ("inductor", "eager"), hosting)
    assert [status for status, _ in results] == [3, 3]
    messages = {result["error"] for _, result in results}
    assert len(messages) == 1
    (message,) = messages
    for words in ("'inductor'", "'eager'", "host0", "host1", "(from --compile-backend)"):
        assert words in message


def test_claims_survive_the_store_encoding() -> None:
    claim = BackendClaim("eager", "ds_config /a b.json", "hôst")
    assert BackendClaim.decode(claim.encode()) == claim


def test_a_claim_like_node_0s_gives_no_message_and_a_differing_one_names_both() -> None:
    first = BackendClaim("eager", "--compile-backend", "h0")
    assert disagreement(first, 5, BackendClaim("eager", "accelerator default", "h5")) is None
    assert disagreement(first, 2, BackendClaim("inductor", "accelerator default", "h2")) == (
        "the nodes resolved different compile backends: node 0 on h0 has 'eager' (from --compile-backend), "
        "node 2 on h2 has 'inductor' (from accelerator default); "
        "give every node the same --compile-backend or ACCEL_COMPILE_BACKEND"
    )


def test_the_wrapped_handlers_are_registered_idempotently() -> None:
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    from launcher.run.engine.rendezvous.backend_agreement import register_handlers

    register_handlers()
    register_handlers()
    assert {"accel-c10d", "accel-static"} <= set(rendezvous_handler_registry._registry)
