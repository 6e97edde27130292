"""The one line a c10d wait that ran out prints: who came, how many never did."""

from __future__ import annotations

from datetime import timedelta

from torch.distributed import TCPStore

from launcher.run.engine.rendezvous.roll_call import RollCall


def test_the_timeout_line_names_who_came_once_each_and_counts_who_never_did() -> None:
    store = TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10))
    first = RollCall(store, "job", "hosta at 10.0.0.1", "10.0.0.1:29500", 3, 10)
    second = RollCall(store, "job", "hostb at 10.0.0.2", "10.0.0.1:29500", 3, 10)
    first.note()
    second.note()
    first.note()  # a second round of the same node
    assert first.timeout_message() == (
        "the nodes did not all come to 10.0.0.1:29500 within --rdzv-timeout 10 s: "
        "2 of 3 came (hosta at 10.0.0.1, hostb at 10.0.0.2); 1 never did"
    )
