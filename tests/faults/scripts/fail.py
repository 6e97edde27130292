"""Rank FAIL_RANK (every rank: `all`) writes a last line to stderr (ending in FAIL_SAYS) and exits FAIL_CODE; the
other ranks wait to be stopped (ignoring SIGTERM when IGNORE_TERM=1, so that only the SIGKILL after the grace
period ends them)."""

import os
import sys

from _rank import ignore_sigterm, mark_started, sleep_forever, wait_for_all_started

if os.environ.get("IGNORE_TERM") == "1":
    ignore_sigterm()
mark_started()
if os.environ.get("FAIL_RANK", "0") in (os.environ["RANK"], "all"):
    wait_for_all_started()
    says = os.environ.get("FAIL_SAYS")
    print(f"rank {os.environ['RANK']}: failing on purpose" + (f": {says}" if says else ""), file=sys.stderr, flush=True)
    sys.exit(int(os.environ.get("FAIL_CODE", "3")))
sleep_forever()
