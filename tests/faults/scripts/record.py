"""A rank that records its argv, its parent chain and the variables named in $RECORD_VARS, then ends.

With `--wait-release`, it waits (at most 60 s) for $RECORD_DIR/release before it ends.
"""

import os
import sys
import time

import psutil

from _rank import mark_started

parents = [f"{p.pid}:{p.name()}:{' '.join(p.cmdline()[:3])}" for p in psutil.Process().parents()[:4]]
names = os.environ.get("RECORD_VARS", "").split(",")
mark_started(
    argv=repr(sys.argv[1:]),
    ppid=os.getppid(),
    parents=repr(parents),
    **{f"env_{name}": repr(os.environ.get(name)) for name in names if name},
)
if "--wait-release" in sys.argv:
    release = os.path.join(os.environ["RECORD_DIR"], "release")
    deadline = time.monotonic() + 60
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.1)
