"""A rank that tries to outlive its launcher, one way per argv[1]:

- `ignore`: it ignores SIGTERM;
- `stuck-handler`: its SIGTERM handler never returns (a preemption handler waiting for a checkpoint that never
  comes), while the main thread is blocked in a gloo collective whose peer never joins (two ranks: rank 1 only
  sleeps);
- `child`, `setsid-child`: it starts a `sleep` that ignores SIGTERM, in its own process group or a session of its
  own, records its pid as `child`, and sleeps;
- `daemon`: it leaves a `setsid sleep` whose parent exited (a daemon, re-parented to the launcher, then init);
- `shell`: it becomes a shell that leaves a background `sleep` (`sh -c "sleep 300 & sleep 301"`).
"""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

from _rank import ignore_sigterm, mark_started, sleep_forever

how = sys.argv[1]
if how == "ignore":
    ignore_sigterm()
    mark_started()
    sleep_forever()
elif how == "stuck-handler":
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    signal.signal(signal.SIGTERM, lambda *_: time.sleep(300))
    mark_started()
    try:
        if dist.get_rank() == 0:
            dist.all_reduce(torch.ones(1))  # rank 1 never joins: blocked in gloo's C++
        else:
            ignore_sigterm()
            sleep_forever()
    finally:
        dist.destroy_process_group()
elif how in ("child", "setsid-child"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the child inherits the ignoring; the rank itself does not keep it
    child = subprocess.Popen(["sleep", "300"], start_new_session=how == "setsid-child")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    mark_started(child=child.pid)
    sleep_forever()
elif how == "daemon":
    subprocess.run(["sh", "-c", "setsid sleep 300 &"], check=True)
    mark_started()
    sleep_forever()
elif how == "shell":
    mark_started()
    os.execvp("sh", ["sh", "-c", "sleep 300 & sleep 301"])
