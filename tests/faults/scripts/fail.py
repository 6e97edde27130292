"""Rank FAIL_RANK writes a last line to stderr and exits FAIL_CODE; the other ranks wait to be stopped."""

import os
import sys

from _rank import mark_started, sleep_forever

mark_started()
if os.environ["RANK"] == os.environ.get("FAIL_RANK", "0"):
    print(f"rank {os.environ['RANK']}: failing on purpose", file=sys.stderr, flush=True)
    sys.exit(int(os.environ.get("FAIL_CODE", "3")))
sleep_forever()
