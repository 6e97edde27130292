"""Rank WORLD_SIZE-1 exits 3 at once; every other rank would sleep for a minute."""

import os
import sys
import time

if int(os.environ["RANK"]) == int(os.environ["WORLD_SIZE"]) - 1:
    print("last rank giving up", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(60)
