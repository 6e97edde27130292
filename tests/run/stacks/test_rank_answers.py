"""Asking real processes for their stacks: one that answers through faulthandler, one that does not catch the
signal (never sent it, so it lives), one whose program handles it itself, and one already gone."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from launcher.contract.names import STACKS_DIR_VAR, STACKS_SIGNAL
from launcher.run.stacks.rank_answers import ask_ranks

pytestmark = pytest.mark.timeout(60)

# As a rank's bootstrap sets it up (launcher/rank/launcher_link.py), in the folder the first argument names.
REGISTERED = f"""
import os, sys
os.environ[{STACKS_DIR_VAR!r}] = sys.argv[1]
from launcher.rank.launcher_link import answer_stack_requests
answer_stack_requests()
"""
ANSWERS = REGISTERED + """
import time
open(os.path.join(sys.argv[1], "ready"), "w").close()
def waiting_here():
    time.sleep(30)
waiting_here()
"""
OWN_HANDLER = REGISTERED + f"""
import signal, time
signal.signal({int(STACKS_SIGNAL)}, lambda *_: open(os.path.join(sys.argv[1], "handled"), "w").close())
open(os.path.join(sys.argv[1], "ready"), "w").close()
time.sleep(30)
"""
PLAIN = """
import os, sys, time
open(os.path.join(sys.argv[1], "ready"), "w").close()
time.sleep(30)
"""


@contextmanager
def started(code: str, folder: Path) -> Iterator[subprocess.Popen]:
    """`code` running until it is ready to be asked; killed when the block ends, whatever happened."""
    process = subprocess.Popen([sys.executable, "-c", code, str(folder)])
    try:
        deadline = time.monotonic() + 30
        while not (folder / "ready").exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        (folder / "ready").unlink()
        time.sleep(0.1)
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_process_with_the_handler_answers_with_its_stack_and_goes_on(tmp_path):
    with started(ANSWERS, tmp_path) as process:
        [answer] = ask_ranks({0: process.pid}, tmp_path)
        assert answer.silent is None and 'line 10 in waiting_here' in answer.dump
        assert process.poll() is None


def test_a_process_that_does_not_catch_the_signal_is_not_sent_it(tmp_path):
    with started(PLAIN, tmp_path) as process:
        [answer] = ask_ranks({0: process.pid}, tmp_path)
        assert answer.dump is None and answer.silent.startswith("does not catch SIGRTMIN+27")
        time.sleep(0.2)
        assert process.poll() is None  # the signal's default action would have ended it


def test_a_program_with_its_own_handler_keeps_it_and_is_said_not_to_answer(tmp_path):
    with started(OWN_HANDLER, tmp_path) as process:
        [answer] = ask_ranks({0: process.pid}, tmp_path, answer_seconds=0.5)
        assert answer.dump is None and "has a handler of its own" in answer.silent
        assert (tmp_path / "handled").exists() and process.poll() is None


def test_a_process_already_gone_is_named_so(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    [answer] = ask_ranks({3: process.pid}, tmp_path)
    assert (answer.rank, answer.silent) == (3, "already gone")
