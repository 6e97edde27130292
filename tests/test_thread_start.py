"""A stop signal that comes while the launcher starts one of its threads acts once the start is done, and the
thread runs (launcher/signal_rules.py, `start_thread`): raised inside `Thread.start`, it left the thread to die of
a KeyError traceback on the terminal (seen on Ctrl-C as 8 ranks started, on the engine path). The same deferral
keeps a few statements whole (`signals_deferred`: the private folder's making and its being known)."""

from __future__ import annotations

import ast
import os
import signal
import threading
from pathlib import Path

import pytest

from launcher import signal_rules
from launcher.signal_rules import signals_deferred, start_thread, stop_action


class Stopped(Exception):
    """What the launcher's stop action raises while ranks run (RanksStopped), here."""


def _raise_stopped(_signum: int) -> None:
    raise Stopped


def test_a_stop_that_comes_as_a_thread_starts_acts_after_the_start_and_the_thread_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_start = threading._start_new_thread  # type: ignore[attr-defined]

    def start_then_signal(function, args):  # the signal lands just after the thread started
        ident = real_start(function, args)
        os.kill(os.getpid(), signal.SIGALRM)
        return ident

    monkeypatch.setattr(threading, "_start_new_thread", start_then_signal)
    previous = signal.signal(signal.SIGALRM, signal_rules._on_signal)  # the launcher's own handler
    ran = threading.Event()
    thread = threading.Thread(target=ran.set, daemon=True)
    try:
        with stop_action(_raise_stopped), pytest.raises(Stopped):
            start_thread(thread)
    finally:
        signal.signal(signal.SIGALRM, previous)
        monkeypatch.undo()
    assert ran.wait(5), "the thread never ran its target"  # with a plain thread.start() it dies before it
    assert thread in threading.enumerate() or not thread.is_alive()


def test_a_stop_inside_a_deferred_block_acts_once_the_block_has_ended() -> None:
    previous = signal.signal(signal.SIGALRM, signal_rules._on_signal)
    done = []
    try:
        with stop_action(_raise_stopped), pytest.raises(Stopped):
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGALRM)
                done.append("the statement after the signal")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert done == ["the statement after the signal"]


def test_the_launcher_starts_every_thread_of_its_own_through_start_thread() -> None:
    """On the launcher's side (rank/ runs in the ranks, under the program's own signals) no `.start()` but
    start_thread's own: the watch's direct start let a Ctrl-C leave a thread made and never started, which its close
    then joined (the launcher's internal error)."""
    root = Path(signal_rules.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "signal_rules.py" or (root / "rank") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "start" \
                    and "thread" in ast.unparse(node.func.value).lower():  # a thread's, not JobWatch.start
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
