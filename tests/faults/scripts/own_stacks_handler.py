"""A program with its own handler for the launcher's stacks signal (SIGRTMAX-3): it notes each call in
$RECORD_DIR/handled-<RANK>, then waits to be stopped."""

import os
import signal

from _rank import mark_started, sleep_forever


def handled(_signum, _frame) -> None:
    with open(os.path.join(os.environ["RECORD_DIR"], f"handled-{os.environ['RANK']}"), "a") as record:
        record.write("handled\n")


signal.signal(signal.SIGRTMAX - 3, handled)
mark_started()
sleep_forever()
