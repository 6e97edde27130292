"""Run a program inside a cgroup: `in_cgroup.py FOLDER PROGRAM [ARGS...]` moves this process into FOLDER (its
cgroup.procs), then execs PROGRAM, whose children start there too."""

import os
import sys

folder, program = sys.argv[1], sys.argv[2:]
with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
    procs.write(str(os.getpid()))
os.execv(program[0], program)
