"""The backend agreement of many node launchers, as threads on one real TCPStore: a few store calls per
node however many nodes there are, and every node stopped when one differs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.run.engine.rendezvous.simulated_nodes import SimulatedNodes, claims_with_one_differing

NODES = 64
MAX_CALLS_AGREEING = 8
MAX_CALLS_DIFFERING = 10


@pytest.fixture(scope="module")
def nodes() -> Iterator[SimulatedNodes]:
    """One store and its clients for the module: agreements follow one another on it, as a static
    rendezvous's rounds do."""
    yield SimulatedNodes(NODES)


def mismatch_line(differing: int) -> str:
    return (
        "BackendMismatchError: the nodes resolved different compile backends: node 0 on host0 has "
        f"'inductor' (from --compile-backend), node {differing} on host{differing} has 'eager' "
        "(from --compile-backend); give every node the same --compile-backend or ACCEL_COMPILE_BACKEND"
    )


@pytest.mark.timeout(120)
def test_many_agreeing_nodes_each_make_a_few_store_calls(nodes: SimulatedNodes) -> None:
    outcome = nodes.agree(claims_with_one_differing(NODES, None))
    assert outcome.results == [None] * NODES
    assert max(outcome.calls) <= MAX_CALLS_AGREEING, outcome.calls


@pytest.mark.timeout(120)
def test_one_differing_node_anywhere_stops_every_node_with_the_line_naming_both(nodes: SimulatedNodes) -> None:
    differing = random.randrange(1, NODES)
    outcome = nodes.agree(claims_with_one_differing(NODES, differing))
    assert outcome.results == [mismatch_line(differing)] * NODES, f"node {differing} differed"
    assert max(outcome.calls) <= MAX_CALLS_DIFFERING, outcome.calls


@pytest.mark.timeout(120)
def test_a_later_round_on_the_same_store_agrees_afresh(nodes: SimulatedNodes) -> None:
    nodes.agree(claims_with_one_differing(NODES, None))
    assert nodes.agree(claims_with_one_differing(NODES, 1)).results == [mismatch_line(1)] * NODES
    assert nodes.agree(claims_with_one_differing(NODES, None)).results == [None] * NODES


@pytest.mark.timeout(120)
@pytest.mark.parametrize("host", [0, 5, 15])
def test_every_node_reads_the_mismatch_before_the_node_hosting_the_store_leaves(host: int) -> None:
    # The host drops the store as soon as it leaves; every other node reads 0.2 s late.
    outcome = SimulatedNodes(16, host=host, slow_get=0.2).agree(claims_with_one_differing(16, 7))
    assert outcome.results == [mismatch_line(7)] * 16


@pytest.mark.timeout(60)
def test_a_node_that_never_comes_makes_the_others_give_up_after_the_timeout_saying_how_many_came() -> None:
    outcome = SimulatedNodes(3).agree(claims_with_one_differing(3, None), world_size=4,
                                      timeout=timedelta(seconds=1))
    assert outcome.results == [
        "RendezvousTimeoutError: the backend agreement did not see all 4 nodes count in within 1 s (3 did)"
    ] * 3
