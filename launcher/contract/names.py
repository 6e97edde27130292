"""The names and numbers the launcher promises (docs/CONTRACT.md): the variables it reads and sets, its
defaults, and the exit statuses a user can rely on. A leaf: every folder of the launcher may import it.
"""

from __future__ import annotations

import signal

__all__ = [
    "BACKEND_VAR", "BACKEND_SOURCE_VAR", "ACCELERATOR_VAR", "LAUNCHER_PID_VAR", "SIGNALS_VAR", "CPU_BINDING_VAR",
    "TORCHRUN_VARS",
    "NODE_JOB_VAR", "NODE_HOSTS_VAR", "NODE_DEVICES_VAR", "NODE_RANK_VAR", "NODE_HOST_VAR", "NODE_COUNT_VAR",
    "STOP_ON_STDIN_EOF", "ACCELERATOR_KEYWORD", "DEFAULT_SOURCE", "DEFAULT_MASTER_PORT", "TORCHRUN_RUN_ID",
    "SUCCESS_STATUS", "FAILURE_STATUS", "VALIDATION_STATUS", "TIMEOUT_STATUS", "SIGNAL_STATUS_BASE",
    "REFUSAL_PHRASE", "START_REFUSAL_PHRASE", "RENDEZVOUS_FAILURE_PHRASE", "LAUNCH_PATH_VAR", "STORE_FD_VAR",
    "AGREEMENT_VAR", "ERROR_FILE_VAR", "PARENT_DEATH_SIGNAL", "STACKS_SIGNAL", "STACKS_DIR_VAR", "STACKS_FILE",
    "COMPILE_STATE_FILE", "PROGRESS_FILE", "PROCESS_CHECK_SECONDS",
    "INTERNAL_VARS", "HEAD_VARS", "COMPILE_CACHE_VAR", "COMPILE_SECRET_VAR", "COMPILE_CACHE_MODES",
    "COMPILE_WAIT_SECONDS", "COMPILE_STORE_SECONDS", "COMPILE_DIR_VAR", "COMPILE_KEY_FILE_VAR",
    "COMPILE_STORE_VAR",
]

# The compile backend: the user may set it; every rank gets it resolved, with the level it came from.
BACKEND_VAR = "ACCEL_COMPILE_BACKEND"
BACKEND_SOURCE_VAR = "ACCEL_COMPILE_BACKEND_SOURCE"
# `--compile-backend accelerator`: the accelerator's own default, asked for by name.
ACCELERATOR_KEYWORD = "accelerator"
# The source of a backend no level named.
DEFAULT_SOURCE = "accelerator default"

# Compile once per job (docs/CONTRACT.md section 7): the mode (--compile-cache), every rank gets it resolved; the
# secret that signs the job's copies of compiled graphs (the user may give the same one to every node); how long
# a rank waits for another's compile before it compiles itself; how long one call to the job's store may take before
# the rank stops sharing across nodes.
COMPILE_CACHE_VAR = "ACCEL_COMPILE_CACHE"
COMPILE_SECRET_VAR = "ACCEL_COMPILE_CACHE_SECRET"
COMPILE_CACHE_MODES = ("job", "node", "off")
COMPILE_WAIT_SECONDS = 600
COMPILE_STORE_SECONDS = 10
# The compile folder that outlives the job (--compile-cache-dir; "" in a rank: none), and, where the secret is the
# user's own key (nodes started one by one), the file it was read from.
COMPILE_DIR_VAR = "ACCEL_COMPILE_CACHE_DIR"
COMPILE_KEY_FILE_VAR = "ACCEL_COMPILE_KEY_FILE"
# Where a restartable job of several nodes keeps its compiled graphs: the rendezvous's store ("host:port"), which the
# node agents host for the whole job, where each attempt's rank 0 hosts a store of its own that dies with it. A node
# that replaces another in a restart, its cache empty, loads the graphs from there.
COMPILE_STORE_VAR = "ACCEL_COMPILE_STORE"

# What every rank gets beyond torchrun's own variables.
ACCELERATOR_VAR = "ACCEL_ACCELERATOR"
LAUNCHER_PID_VAR = "ACCEL_LAUNCHER_PID"
# torch's launch_agent puts --signals-to-handle in its own environment, so every rank inherits it.
SIGNALS_VAR = "TORCHELASTIC_SIGNALS_TO_HANDLE"
# Local rank i's cores are the i-th `;`-separated group: `0,1;2,3` pins rank 0 to 0-1 and rank 1 to 2-3.
CPU_BINDING_VAR = "ACCEL_CPU_BINDING"
# The signal Linux sends a rank when its launcher dies (launcher/rank/launcher_link.py): one that no program is
# likely to use, so that SIGTERM keeps its default action in the rank, as under torchrun (a rank blocked in C++,
# a store's connect or a hung collective, then ends at once, where a Python handler would wait for it), and a
# handler of the user's for SIGTERM cannot stand in for the one that takes the rank's processes along. The
# launcher reads a rank's handler for it as "the bootstrap's handlers are in place" (launcher/run/group/rank_stop.py).
PARENT_DEATH_SIGNAL = signal.SIGRTMAX - 2
# The signal that asks a rank for its Python stacks (`accel-launch stacks`, --timeout, a failure while other ranks
# run; docs/CONTRACT.md section 8): faulthandler's C handler answers it, however the rank is blocked, into
# STACKS_FILE in the folder STACKS_DIR_VAR names (0700, the launcher's), beside COMPILE_STATE_FILE, which says
# whether the rank is inside torch.compile. Another of the launcher's own real-time signals, as unlikely to be used.
STACKS_SIGNAL = signal.SIGRTMAX - 3
STACKS_DIR_VAR = "ACCEL_STACKS_DIR"
STACKS_FILE = "rank-{rank}.stacks"
COMPILE_STATE_FILE = "rank-{rank}.compile"
# Each rank's steps and phase, for the launcher's watch (docs/CONTRACT.md section 9), in the same folder.
PROGRESS_FILE = "rank-{rank}.progress"
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
# torch elastic's error file: where each rank (and a launcher under a parent launch) writes its failure's record.
ERROR_FILE_VAR = "TORCHELASTIC_ERROR_FILE"

# Which way a one-node launch starts its ranks: `auto` (the launcher itself where it can) or `engine` (torch
# elastic's agent always); and, on the direct path, the listening socket rank 0 alone inherits to host the store.
LAUNCH_PATH_VAR = "ACCEL_LAUNCH_PATH"
STORE_FD_VAR = "ACCEL_STORE_FD"
# The direct path of several nodes: the ranks make the agreement at init_process_group; its value is the seconds
# a rank waits for the others there (--rdzv-timeout).
AGREEMENT_VAR = "ACCEL_AGREEMENT_SECONDS"

# What the head of a hostfile launch hands each node launcher: the job, and the node table.
NODE_JOB_VAR = "ACCEL_NODE_JOB"
NODE_HOSTS_VAR = "ACCEL_NODE_HOSTS"
NODE_DEVICES_VAR = "ACCEL_NODE_DEVICES"
NODE_RANK_VAR = "ACCEL_NODE_RANK"
NODE_HOST_VAR = "ACCEL_NODE_HOST"
NODE_COUNT_VAR = "ACCEL_NODE_COUNT"
# The launcher's own variables, which it sets for its children only: what the user's environment or a parent launch
# left of them is never trusted, but removed where the launcher starts (docs/RELIABILITY.md, "Internal variables").
# A node launcher keeps HEAD_VARS, its job from its head, until it has read them.
INTERNAL_VARS = (STORE_FD_VAR, LAUNCHER_PID_VAR, BACKEND_SOURCE_VAR, AGREEMENT_VAR, STACKS_DIR_VAR, COMPILE_STORE_VAR)
HEAD_VARS = (NODE_JOB_VAR,)
# The node launcher's one flag: stop its ranks when its standard input closes (the head's ssh went away).
STOP_ON_STDIN_EOF = "--stop-on-stdin-eof"

# torchrun's defaults: the port a fixed endpoint gets, and the run id of nodes started by hand without one.
DEFAULT_MASTER_PORT = 29500
TORCHRUN_RUN_ID = "none"

# How often the launcher looks at the processes it waits for (its ranks as they stop, a hostfile's node launchers,
# the leftovers of the end-of-job sweep), and so how soon it acts on an exit, or on a stop a second signal hurried.
PROCESS_CHECK_SECONDS = 0.05

# Exit statuses, the one table of them (docs/CONTRACT.md, section 4; docs/RELIABILITY.md): an error class
# carries its own as `exit_status` (launcher/errors.py), and no other module writes a status as a number.
SUCCESS_STATUS = 0
# The launch failed on its own account: a rendezvous, output lost on stdout (as coreutils exit), a bug of ours
# (one line asking for a report); and a rank's program that ended in an uncaught exception, as python exits.
FAILURE_STATUS = 1
# What the user can fix before anything starts: bad input, a busy --master-port, a limit (ulimit) too low, and
# a compile backend refused by the launcher or by a rank before user code (a configuration error).
VALIDATION_STATUS = 2
# A job stopped by --timeout exits as timeout(1) does.
TIMEOUT_STATUS = 124
# Stopped by signal N (or a rank killed by it): this plus N, as a shell reports it (130 SIGINT, 143 SIGTERM).
SIGNAL_STATUS_BASE = 128
# The phrases a rank's refusal line carries, by which the launcher tells it from other failures.
REFUSAL_PHRASE = "refused the compile backend"
START_REFUSAL_PHRASE = "refused to start"
# What a rank on the direct path of several nodes says when its rendezvous fails (exit 1, as torchrun's does).
RENDEZVOUS_FAILURE_PHRASE = "failed at the rendezvous"
