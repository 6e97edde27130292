"""A program that closes the descriptor its faulthandler dumps to (found as a link to its rank-N.stacks in
/proc/self/fd, as `os.closerange` would close it); rank 1 then opens a file of its own, which gets that number
($RECORD_DIR/mine-<RANK>.txt, dup2 standing for the kernel's lowest free number). Then it waits to be stopped."""

import os

from _rank import mark_started, sleep_forever

rank = os.environ["RANK"]
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        continue
    if target.endswith(f"/rank-{rank}.stacks"):
        os.close(int(name))
        if rank == "1":
            mine = os.open(os.path.join(os.environ["RECORD_DIR"], f"mine-{rank}.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
            if mine != int(name):  # the kernel gave it another number: give it this one
                os.dup2(mine, int(name))
                os.close(mine)
mark_started()
sleep_forever()
