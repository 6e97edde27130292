"""Every rank's SIGTERM handler writes a checkpoint that takes TERM_SECONDS (the preemption pattern):
it notes `term-<RANK>` when it starts and `checkpoint-<RANK>` when done, then exits 0. Rank FAIL_RANK
(unless empty) exits 3 once every rank has started."""

import os
import signal
import sys
import time

from _rank import mark_started, sleep_forever, wait_for_all_started

RECORD_DIR = os.environ["RECORD_DIR"]
RANK = os.environ["RANK"]


def checkpoint(_signum, _frame) -> None:
    open(os.path.join(RECORD_DIR, f"term-{RANK}"), "w").close()
    time.sleep(float(os.environ.get("TERM_SECONDS", "2.5")))
    open(os.path.join(RECORD_DIR, f"checkpoint-{RANK}"), "w").close()
    sys.exit(0)


signal.signal(signal.SIGTERM, checkpoint)
mark_started()
if RANK == os.environ.get("FAIL_RANK", "1"):
    wait_for_all_started()
    sys.exit(3)
sleep_forever()
