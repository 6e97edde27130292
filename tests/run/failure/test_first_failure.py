"""Naming the first failure: the first to exit, never decided by what a rank wrote."""

from __future__ import annotations

from dataclasses import dataclass

from launcher.run.failure.rank_failure import first_failure, lost_peer_note

LOST = ("RuntimeError: [pair.cc:537] Read error [10.0.0.7]:28822: Connection reset by peer.",)
OWN = ("ValueError: bad batch",)


@dataclass
class Failure:
    pid: int
    timestamp: int
    exitcode: int = 1


def order(**exited: float) -> dict[int, float]:
    return {int(pid[1:]): when for pid, when in exited.items()}


def test_the_rank_that_exited_first_is_named_even_when_torch_stamps_a_tie() -> None:
    failures = {0: Failure(100, 5), 1: Failure(101, 5)}
    assert first_failure(failures, order(p100=2.0, p101=1.0))[0] == 1


def test_what_a_rank_wrote_never_passes_it_over_the_first_to_exit_is_named() -> None:
    # rank 0 wrote "Connection reset by peer" itself and exited first; rank 1 was stopped by the teardown
    failures = {0: Failure(100, 5, 7), 1: Failure(101, 5, -15)}
    assert first_failure(failures, order(p100=1.0, p101=2.0))[0] == 0


def test_without_every_exit_seen_a_rank_ended_by_a_signal_in_the_same_second_comes_after_one_that_exited() -> None:
    failures = {0: Failure(100, 5, -15), 1: Failure(101, 5, 7)}
    assert first_failure(failures, order())[0] == 1


def test_without_every_exit_seen_torch_timestamps_then_the_lowest_rank_decide() -> None:
    failures = {2: Failure(100, 6), 1: Failure(101, 6), 0: Failure(102, 7)}
    assert first_failure(failures, order(p100=1.0))[0] == 1


def test_the_note_names_the_address_of_the_lost_peer() -> None:
    assert "its peer at 10.0.0.7" in lost_peer_note(LOST)
    assert lost_peer_note(OWN) is None
