"""A rank that backgrounds ZOMBIE_COUNT shell commands (each ends at once, leaving its process to the
launcher), records how many of them the launcher holds as zombies after a while, then exits 0."""

import os
import subprocess
import time

import psutil
from _rank import mark_started

mark_started()
count = int(os.environ.get("ZOMBIE_COUNT", "20"))
subprocess.run(["sh", "-c", " ".join(["true &"] * count)], check=True)
time.sleep(2)
record_dir = os.environ["RECORD_DIR"]
ranks = {int(open(os.path.join(record_dir, name)).readline().split("=")[1])  # a rank that ended is no adoptee
         for name in os.listdir(record_dir) if name.startswith("started-") and not name.endswith(".tmp")}
launcher = psutil.Process(os.getppid())
zombies = [child for child in launcher.children() if child.status() == psutil.STATUS_ZOMBIE and child.pid not in ranks]
with open(os.path.join(record_dir, "zombies"), "w", encoding="utf-8") as handle:
    handle.write(f"{len(zombies)}\n")
