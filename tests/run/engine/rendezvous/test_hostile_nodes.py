"""Nothing another node writes is trusted (docs/RELIABILITY.md): on one real TCPStore, a hostile node writes
bytes of its choosing where the backend agreement reads another node's claim, and every honest node ends with
one short printable line naming the node, never an internal error or a wait without a bound."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from torch.distributed import TCPStore
from torch.distributed.elastic.rendezvous import RendezvousError

from launcher.contract.resolved_backend import MAX_CLAIM_BYTES, BackendClaim, NodeClaim
from launcher.escaped import escaped_lines
from launcher.run.engine.rendezvous.backend_agreement import BackendMismatchError, NodeRecordError, agree
from launcher.run.engine.rendezvous.roll_call import RollCall

# The agreement's keys in the store, as its first round names them (launcher/run/engine/rendezvous/backend_agreement.py).
ARRIVALS, FIRST, MISMATCH, COUNTED_IN, VERDICT, READ, ALL_READ = (
    "accel/agreement/arrivals", "accel/agreement/first", *(
    f"accel/agreement/0/{name}" for name in ("mismatch", "in", "verdict", "read", "all_read")))
HONEST = BackendClaim("inductor", "--compile-backend", "honest")
WAIT = timedelta(seconds=10)
FORGED = "accel-launch: error: forged"


def fields(**changed: object) -> bytes:
    """A claim record with `changed` fields (None: left out)."""
    record = {"backend": "eager", "source": "--compile-backend", "host": "hostile", "torch": "", "python": "",
              "accelerator": "", "world": "", "node": 1, **changed}
    return json.dumps({key: value for key, value in record.items() if value is not None}).encode()


# name: (the bytes written, a fragment of the line every honest node ends with)
HOSTILE_BYTES = {
    "not UTF-8": (b'{"backend": "\xff\xfe"}', "it is not UTF-8 text (byte 13)"),
    "not JSON": (b"backend=eager", "it is not JSON (Expecting value at line 1 column 1)"),
    "a list": (b'["eager", "--compile-backend", "hostile"]', "it is a list, not a JSON object"),
    "a string": (b'"eager"', "it is a string, not a JSON object"),
    "a field missing": (fields(host=None), "its fields are not accelerator, backend, host, "),
    "an unknown field": (fields(evil="\n" + FORGED), "unknown 'evil'"),
    "a field of the wrong type": (fields(host=["a", "b"]), "its host is not a string but a list"),
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "it is 200000 bytes, more than the 65536"),
    "nested 10,000 deep (within the bound)": (b"[" * 10_000 + b"]" * 10_000, "it is JSON nested too deeply"),
    "a 5 MB host": (fields(host="h" * 5_000_000), "it is 5000"),
    "a number of 20,000 digits": (b'{"backend": ' + b"9" * 20_000 + b"}", "a number of more digits than can be read"),
}


def one_short_line(text: str) -> None:
    """`text` is one line a terminal shows as it is: printable, short, with no forged line of ours inside."""
    assert text.isprintable() and len(text) < 1200, text[:2000]
    assert escaped_lines(text) == text


def run_nodes(work: dict[int, Callable[[TCPStore], object]]) -> tuple[dict[int, object], float]:
    """Run each node's `work` (given its own client of one fresh store) in a thread; what each returned or raised."""
    server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    clients = {rank: TCPStore("127.0.0.1", server.port, is_master=False, timeout=WAIT) for rank in work}
    results: dict[int, object] = {}

    def node(rank: int) -> None:
        try:
            results[rank] = work[rank](clients[rank])
        except Exception as exc:  # every outcome is asserted on
            results[rank] = exc

    threads = [threading.Thread(target=node, args=(rank,)) for rank in work]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, time.monotonic() - started


def differing_node_1(raw: bytes, world_size: int) -> Callable[[TCPStore], None]:
    """Node 1, which writes `raw` as its differing claim and otherwise plays the agreement as an honest node."""

    def play(store: TCPStore) -> None:
        store.wait([FIRST], WAIT)
        store.add(ARRIVALS, 1)
        store.set(MISMATCH, raw)
        if store.add(COUNTED_IN, 1) == world_size:
            store.set(VERDICT, raw)
        if store.add(READ, 1) == world_size:
            store.set(ALL_READ, b"1")

    return play


def honest(rank: int, world_size: int) -> Callable[[TCPStore], object]:
    return lambda store: agree(store, rank, world_size, HONEST, WAIT)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", HOSTILE_BYTES)
def test_hostile_bytes_as_node_0s_claim_stop_every_honest_node_with_one_line_naming_node_0(case: str) -> None:
    raw, fragment = HOSTILE_BYTES[case]

    def hostile_node_0(store: TCPStore) -> None:
        store.add(ARRIVALS, 1)
        store.set(FIRST, b"0 3 " + raw)  # round 0 of 3 nodes, then the claim

    results, seconds = run_nodes({0: hostile_node_0, 1: honest(1, 3), 2: honest(2, 3)})

    for rank in (1, 2):
        error = results[rank]
        assert isinstance(error, NodeRecordError) and isinstance(error, RendezvousError), repr(error)[:2000]
        assert str(error).startswith("what node 0 wrote to the rendezvous store for the backend agreement is not "
                                     "what accel-launch writes: ")
        assert fragment in str(error)
        one_short_line(str(error))
    assert seconds < 5  # at once: no wait for a timeout


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", [*HOSTILE_BYTES, "a node number out of range", "node 0's own backend"])
def test_a_hostile_differing_record_stops_every_honest_node_with_one_line(case: str) -> None:
    raw, fragment = {
        "a node number out of range": (fields(node=7), "it names node 7, not one of nodes 1 to 2"),
        "node 0's own backend": (fields(backend="inductor"), "it says it differs from node 0 but claims the same"),
    }.get(case) or HOSTILE_BYTES[case]

    results, seconds = run_nodes({0: honest(0, 3), 1: differing_node_1(raw, 3), 2: honest(2, 3)})

    for rank in (0, 2):
        error = results[rank]
        assert isinstance(error, NodeRecordError), repr(error)[:2000]
        assert fragment in str(error)
        one_short_line(str(error))
    assert seconds < 5  # every honest node read the verdict; none waited for the timeout


@pytest.mark.timeout(60)
def test_a_differing_nodes_host_and_source_reach_the_line_escaped_and_shortened() -> None:
    host = f"h\n{FORGED}\x1b[2J\u202e" + "x" * 50_000
    claim = BackendClaim("eager\r", "--compile-backend\n" + FORGED, host)
    assert len(NodeClaim(1, claim).encode()) < MAX_CLAIM_BYTES

    results, _ = run_nodes({0: honest(0, 3), 1: differing_node_1(NodeClaim(1, claim).encode(), 3), 2: honest(2, 3)})

    for rank in (0, 2):
        error = results[rank]
        assert isinstance(error, BackendMismatchError), repr(error)[:2000]
        one_short_line(str(error))
        assert f"node 1 on h\\n{FORGED}\\x1b[2J\\u202exxx" in str(error)
        assert f"({len(host)} characters)" in str(error)
        assert "has 'eager\\r' (from --compile-backend\\naccel-launch: error: forged)" in str(error)


def test_the_roll_call_names_a_few_nodes_each_escaped_and_shortened() -> None:
    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    honest_node = RollCall(store, "job", "hosta", "10.0.0.1:29500", 2, 10)
    honest_node.note()
    store.append("accel/arrived/job", b"\xff\xfe" + f"{FORGED}\x1b[2J".encode() + b"y" * 100_000 + b"\n")
    for index in range(40):
        store.append("accel/arrived/job", f"fake{index}\n".encode())
    store.append("accel/arrived/job", b"z" * 5_000_000)  # read only up to the bound

    line = honest_node.timeout_message()

    one_short_line(line)
    assert line.startswith("the nodes did not all come to 10.0.0.1:29500 within --rdzv-timeout 10 s: 43 of 2 came "
                           f"(hosta, \ufffd\ufffd{FORGED}\\x1b[2Jyyy")
    assert f"yyy ({2 + len(FORGED) + 4 + 100_000} characters), fake0, fake1, " in line
    assert line.endswith("fake13 and 27 more); 0 never did")
