"""A job's stop is one object its driver hands on (launcher/run/scope/job_signals.py, `StopState`): the first stop signal
while the ranks run is raised, with the signal the ranks get; one while they are being stopped, or after their run,
only hurries the stop, and the first of those is kept."""

from __future__ import annotations

import signal

import pytest

from launcher import signal_rules
from launcher.run.scope.job_signals import RanksStopped, StopState


def test_the_first_stop_signal_is_raised_with_the_signal_the_ranks_get_and_a_later_one_only_hurries() -> None:
    stopping = StopState("SIGINT,SIGTERM")

    with pytest.raises(RanksStopped) as raised:
        stopping.stop(signal.SIGHUP)
    stopping.stop(signal.SIGINT)
    stopping.stop(signal.SIGTERM)

    assert (raised.value.received, raised.value.sent) == (signal.SIGHUP, signal.SIGTERM)
    assert (stopping.received, stopping.sent, stopping.hurried) == (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)


def test_a_stop_signal_while_the_ranks_are_being_stopped_hurries_and_after_it_one_is_raised() -> None:
    stopping = StopState("SIGINT")  # as between torch's attempts: the last one's ranks stopped, a restart next

    with stopping.ending():
        stopping.stop(signal.SIGINT)
    assert (stopping.received, stopping.hurried) == (None, signal.SIGINT)
    with pytest.raises(RanksStopped) as raised:
        stopping.stop(signal.SIGTERM)
    assert (raised.value.received, raised.value.sent) == (signal.SIGTERM, signal.SIGTERM)


def test_from_the_ranks_start_the_job_stop_is_what_a_stop_signal_does_and_after_their_run_it_only_hurries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal_rules._Now, "stop", signal_rules._Now.stop)  # put back after the test
    stopping, forwarded = StopState("SIGUSR1"), []

    with stopping.ranks_running(lambda signum: forwarded.append(signum) or 1):
        signal_rules._on_signal(signal.SIGUSR2, None)
    signal_rules._on_signal(signal.SIGTERM, None)

    assert forwarded == [signal.SIGUSR2]
    assert (stopping.received, stopping.hurried) == (None, signal.SIGTERM)


def test_a_forwarded_signal_named_in_signals_to_handle_stops_the_job_while_the_ranks_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal_rules._Now, "stop", signal_rules._Now.stop)
    stopping = StopState("SIGUSR1")

    with pytest.raises(RanksStopped) as raised, stopping.ranks_running(lambda signum: 1):
        signal_rules._on_signal(signal.SIGUSR1, None)

    assert (raised.value.received, raised.value.sent) == (signal.SIGUSR1, signal.SIGUSR1)
