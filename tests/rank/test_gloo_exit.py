"""A rank exits cleanly when gloo's worker thread still releases its last collective as the script ends: the
rank waits, bounded, for gloo's threads to settle before the interpreter finalizes (launcher/rank/gloo_exit.py;
docs/RELIABILITY.md, "A clean exit after the last collective"). The wait is the rank's own: one launch path."""

from __future__ import annotations

import ctypes
import hashlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from launcher.rank.gloo_exit import GLOO_THREAD, settle
from tests.launches import SCRIPTS, Launcher, clean_environ

BUSY_GLOO_THREAD = SCRIPTS / "busy_gloo_thread.py"
BLOCK = bytes(1 << 20)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rank_ends_after_its_gloo_thread_settles_where_plain_python_cuts_it_off(launch: Launcher,
                                                                                 tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    theirs = subprocess.run([sys.executable, str(BUSY_GLOO_THREAD)], env=clean_environ({"RECORD_DIR": str(plain)}),
                            capture_output=True, text=True, timeout=100)
    assert theirs.returncode == 0 and not (plain / "settled").exists(), theirs.stderr[-2000:]
    ours = launch([str(BUSY_GLOO_THREAD)], timeout=100)
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert (ours.record_dir / "settled").read_text() == "settled\n"


def _thread_named(name: bytes, busy: threading.Event, stop: threading.Event) -> threading.Thread:
    """A real thread that takes the kernel name `name`, then runs (state R) while `busy` is set."""
    def body() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0) == 0  # PR_SET_NAME
        while not stop.is_set():
            if busy.is_set():
                hashlib.sha256(BLOCK).digest()  # runs without the GIL, so the thread is not seen waiting for it
            else:
                stop.wait(0.005)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_the_wait_lasts_while_a_gloo_thread_runs_and_is_bounded() -> None:
    busy, stop = threading.Event(), threading.Event()
    busy.set()
    thread = _thread_named(GLOO_THREAD.encode(), busy, stop)
    try:
        started = time.monotonic()
        assert settle(0.3) is False
        assert 0.3 <= time.monotonic() - started < 2
        threading.Timer(0.2, busy.clear).start()
        started = time.monotonic()
        assert settle(5) is True
        assert 0.15 <= time.monotonic() - started < 2
    finally:
        stop.set()
        thread.join(5)


def test_other_threads_that_run_do_not_make_the_rank_wait() -> None:
    busy, stop = threading.Event(), threading.Event()
    busy.set()
    thread = _thread_named(b"pt_autograd_0", busy, stop)
    try:
        started = time.monotonic()
        assert settle(5) is True
        assert time.monotonic() - started < 0.5
    finally:
        stop.set()
        thread.join(5)
