"""A rank whose thread named as gloo's worker threads are still runs when the script ends: it spins for 0.5 s,
then writes $RECORD_DIR/settled and sleeps. A rank of ours waits for it at exit (launcher/rank/gloo_exit.py);
plain python ends the thread mid-spin, and the file is never written (tests/rank/test_gloo_exit.py)."""

import ctypes
import hashlib
import os
import threading
import time

import torch.distributed  # noqa: F401  (a rank waits for gloo's threads only where torch.distributed is imported)

named = threading.Event()
BLOCK = bytes(1 << 20)


def spin_then_settle() -> None:
    ctypes.CDLL(None).prctl(15, b"pt_gloo_runloop", 0, 0, 0)  # PR_SET_NAME
    named.set()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        hashlib.sha256(BLOCK).digest()  # runs without the GIL: the thread stays running, not waiting for it
    with open(os.path.join(os.environ["RECORD_DIR"], "settled"), "w", encoding="utf-8") as handle:
        handle.write("settled\n")
    time.sleep(60)


threading.Thread(target=spin_then_settle, daemon=True).start()
named.wait(10)
print("out: leaving", flush=True)
