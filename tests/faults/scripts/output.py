"""Output a launcher must copy in bounded memory and show live (OUTPUT_CASE):
- long-line: after $RECORD_DIR/go appears, 50 MiB on stderr without a newline, then `written-<RANK>`;
- bar: a progress bar on stderr (`\r10%`), held until $RECORD_DIR/go appears, then `\r100%` and its newline;
- chatter: 3 MiB of numbered lines on stdout, then exit 0."""

import os
import sys
import time

from _rank import mark_started

RECORD_DIR = os.environ["RECORD_DIR"]


def wait_for_go() -> None:
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(RECORD_DIR, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)


case = os.environ["OUTPUT_CASE"]
mark_started()
if case == "long-line":
    wait_for_go()
    block = b"x" * 2**20
    for _ in range(50):
        os.write(2, block)
    with open(os.path.join(RECORD_DIR, f"written-{os.environ['RANK']}"), "w") as handle:
        handle.write("done\n")
    time.sleep(1)
elif case == "bar":
    sys.stderr.write("\r10%")
    sys.stderr.flush()
    wait_for_go()
    sys.stderr.write("\r100%\n")
elif case == "chatter":
    for number in range(3 * 2**20 // 16):
        print(f"line {number:09d}", flush=number % 1000 == 0)
