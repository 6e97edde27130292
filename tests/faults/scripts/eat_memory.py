"""Rank OOM_RANK (default 1) takes memory, 32 MiB at a time and every page written, until something ends it (at
most 8 GiB); the other ranks wait to be stopped."""

import os

from _rank import mark_started, sleep_forever, wait_for_all_started

mark_started()
if os.environ["RANK"] == os.environ.get("OOM_RANK", "1"):
    wait_for_all_started()
    held = [b"\x01" * (32 << 20) for _ in range(256)]
sleep_forever()
