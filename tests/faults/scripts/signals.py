"""A rank that notes every SIGUSR1 and SIGUSR2 it gets (a line in $RECORD_DIR/<SIGNAL>-<RANK>), then waits
for $RECORD_DIR/release (at most 60 s) and ends 0."""

import os
import signal
import time

from _rank import mark_started

RECORD_DIR = os.environ["RECORD_DIR"]


def note(signum, _frame) -> None:
    with open(os.path.join(RECORD_DIR, f"{signal.Signals(signum).name}-{os.environ['RANK']}"), "a") as handle:
        handle.write("received\n")


for sig in (signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, note)
mark_started()
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(RECORD_DIR, "release")) and time.monotonic() < deadline:
    time.sleep(0.05)
