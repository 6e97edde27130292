"""Teardown: the last rank waits until every rank has started, stamps the time, and exits 1.

The others sleep until they are stopped. STAMP_DIR holds one start file per rank and the stamp.
"""

import os
import sys
import time
from pathlib import Path

stamps = Path(os.environ["STAMP_DIR"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
(stamps / f"started-{rank}").touch()
if rank != world - 1:
    time.sleep(120)
    sys.exit(0)
while len(list(stamps.glob("started-*"))) < world:
    time.sleep(0.01)
time.sleep(0.2)
(stamps / "exit.tmp").write_text(repr(time.time()))
os.replace(stamps / "exit.tmp", stamps / "exit")
sys.exit(1)
