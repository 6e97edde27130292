"""Each rank puts something in place of its own file in the launcher's stacks folder (TAMPER: `compile` or `stacks`):
rank 0 a FIFO, rank 1 a folder, rank 2 a symbolic link to a FIFO, rank 3 a 64 GiB sparse file; then it waits to be
stopped. No torch: only the files matter."""

import os

from _rank import mark_started, sleep_forever

rank = int(os.environ["RANK"])
folder = os.environ["ACCEL_STACKS_DIR"]
path = os.path.join(folder, f"rank-{rank}.{os.environ['TAMPER']}")
if os.path.lexists(path):
    os.unlink(path)
if rank == 0:
    os.mkfifo(path)
elif rank == 1:
    os.mkdir(path)
elif rank == 2:
    elsewhere = os.path.join(os.environ["RECORD_DIR"], "elsewhere.fifo")
    os.mkfifo(elsewhere)
    os.symlink(elsewhere, path)
else:
    with open(path, "wb") as huge:
        huge.truncate(64 << 30)
mark_started()
sleep_forever()
