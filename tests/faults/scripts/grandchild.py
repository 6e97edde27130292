"""A rank that starts a `sleep` grandchild, records its pid, then exits or hangs (argv[1]).

The grandchild is in the rank's process group, or with `--setsid` in a session of its own (as `setsid sleep`).
With `--own-handler` the rank handles SIGTERM itself, as a script that checkpoints on preemption does (it exits)."""

import signal
import subprocess
import sys

from _rank import mark_started, sleep_forever

if "--own-handler" in sys.argv:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
child = subprocess.Popen(["sleep", "300"], start_new_session="--setsid" in sys.argv)
mark_started(grandchild=child.pid)
if "hang" in sys.argv[1:]:
    sleep_forever()
