"""A rank that starts a `sleep` grandchild (same process group), records its pid, then exits or hangs (argv[1])."""

import subprocess
import sys

from _rank import mark_started, sleep_forever

child = subprocess.Popen(["sleep", "300"])
mark_started(grandchild=child.pid)
if sys.argv[1:] == ["hang"]:
    sleep_forever()
