"""The one-node rendezvous: the agent's own store on a port the kernel picks, shared with its ranks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from torch.distributed import TCPStore
from torch.distributed.elastic.rendezvous import RendezvousParameters, rendezvous_handler_registry

from launcher.contract.job_config import ONE_NODE_BACKEND
from launcher.run.engine.rendezvous.one_node import OneNodeRendezvous, register_one_node


@pytest.mark.timeout(60)
def test_two_launches_on_one_machine_get_two_stores_the_ranks_can_reach() -> None:
    first, second = (OneNodeRendezvous("127.0.0.1", f"run-{n}", timedelta(seconds=10)) for n in (1, 2))
    infos = [first.next_rendezvous(), second.next_rendezvous()]

    ports = [info.bootstrap_store_info.master_port for info in infos]
    assert 0 not in ports and ports[0] != ports[1]
    assert [(info.rank, info.world_size) for info in infos] == [(0, 1), (0, 1)]
    assert first.use_agent_store and first.num_nodes_waiting() == 0 and not first.is_closed()
    # A rank's client reaches the agent's store at the address and port it is given.
    infos[0].store.set("seen", b"by the agent")
    client = TCPStore("127.0.0.1", ports[0], is_master=False, timeout=timedelta(seconds=10))
    assert client.get("run-1/seen") == b"by the agent"


@pytest.mark.timeout(60)
def test_a_second_rendezvous_of_the_same_agent_keeps_its_store_and_port() -> None:
    handler = OneNodeRendezvous("127.0.0.1", "run", timedelta(seconds=10))
    first, again = handler.next_rendezvous(), handler.next_rendezvous()
    assert first.bootstrap_store_info.master_port == again.bootstrap_store_info.master_port


@pytest.mark.timeout(60)
def test_the_registered_handler_gives_ranks_the_local_address_else_this_hosts_name() -> None:
    import socket

    register_one_node()
    register_one_node()  # idempotent: one launcher may run more than one job in tests
    # The store's own connect may stall 5 s on this machine (seen once in ten runs); its timeout leaves room to retry.
    given = RendezvousParameters(ONE_NODE_BACKEND, "127.0.0.1:0", "run", 1, 1, local_addr="127.0.0.1", timeout=30)
    standalone = RendezvousParameters(ONE_NODE_BACKEND, "127.0.0.1:0", "run", 1, 1, timeout=30)
    addresses = [rendezvous_handler_registry.create_handler(params).next_rendezvous().bootstrap_store_info.master_addr
                 for params in (given, standalone)]
    assert addresses == ["127.0.0.1", socket.getfqdn()]
