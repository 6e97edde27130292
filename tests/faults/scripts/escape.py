"""A rank whose child tries to escape the launcher's keeper: it drops the launcher's mark from its environment
(`env -u ACCEL_LAUNCHER_PID`) and ignores SIGTERM, and does one more thing, argv[1 + RANK % (len(argv) - 1)]:

- `session`: nothing: it stays in the rank's session and process group;
- `setsid`: it makes a session of its own;
- `setpgid`: it makes a process group of its own, in the rank's session;
- `daemon`: it makes a session of its own and its parent exits (`sh -c "setsid sleep 300 &"`).

The rank records its child's pid as `child` (none for the daemon) and sleeps; it ends by SIGTERM itself.
"""

import os
import signal
import subprocess
import sys

from _rank import mark_started, sleep_forever

modes = sys.argv[1:]
mode = modes[int(os.environ["RANK"]) % len(modes)]
unmarked = ["env", "-u", "ACCEL_LAUNCHER_PID"]
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the child inherits the ignoring; the rank itself does not keep it
if mode == "daemon":
    subprocess.run([*unmarked, "sh", "-c", "setsid sleep 300 &"], check=True)
    child = None
else:
    child = subprocess.Popen([*unmarked, "sleep", "300"], start_new_session=mode == "setsid",
                             process_group=0 if mode == "setpgid" else None).pid
signal.signal(signal.SIGTERM, signal.SIG_DFL)
mark_started(mode=mode, child=child)
sleep_forever()
