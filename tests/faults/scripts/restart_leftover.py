"""One rank over two attempts: the first leaves a `sleep` in a session of its own (which no stop of the rank's
session reaches) and fails; the second records whether that process still runs, in $RECORD_DIR/leftover."""

import os
import subprocess
import sys

record = os.path.join(os.environ["RECORD_DIR"], "leftover")
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(record, "w", encoding="utf-8") as handle:
        handle.write(str(child.pid))
    sys.exit(3)
with open(record, encoding="utf-8") as handle:
    pid = int(handle.read())
try:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        state = handle.read().rpartition(")")[2].split()[0]
except FileNotFoundError:
    state = "gone"
with open(record, "w", encoding="utf-8") as handle:
    handle.write("running" if state not in ("gone", "Z") else "gone")
