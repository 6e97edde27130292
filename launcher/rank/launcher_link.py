"""What ties a rank to its launcher: it ends with it, and answers its request for stacks.

A rank ends with its launcher (`die_with_launcher`): when the launcher dies (a SIGKILL, the OOM killer), the rank
sends SIGTERM to every process below it and to its own process group, itself included (docs/CONTRACT.md section 3).

Two ways to notice, one action, taken once:
- Linux's parent-death signal, PARENT_DEATH_SIGNAL (not SIGTERM, which keeps its default action in a rank, as
  under torchrun). Its handler is Python's, so it runs only when the main thread returns to Python.
- A thread that checks every WATCH_SECONDS whether the launcher is still the rank's parent, for a rank whose
  main thread is blocked in torch's C++ (a store's connect, a hung collective): such calls release the GIL, but
  the handler would wait until the call returned. It asks the kernel, not a file descriptor, which the
  program may close (`os.closerange`) or reuse.

What ignores SIGTERM, or never ends by it, is the launcher's keeper's (launcher/run/scope/job_keeper.py): it SIGKILLs what
is left of the job when the grace window after the launcher's death ends.

Nothing of this acts in a process the rank forks: the child has no thread and no parent-death signal (Linux
clears it at fork), and the handler is the default again there.

A rank answers STACKS_SIGNAL with every thread's Python stack (`answer_stack_requests`, docs/CONTRACT.md section 8).
One C call at the rank's start: faulthandler, registered for the signal, writes the stacks from its C handler into
the rank's file in the launcher's private folder, however the rank is blocked (a gloo collective, a store's wait, a
lock held in C++), and the rank goes on. No thread, no poll. A program that sets its own handler for the signal keeps
it: the signal then reaches its handler, and the launcher says the rank did not answer. A process the rank forks does
not answer.

faulthandler keeps the descriptor's number, not the file: a program that closes it (`os.closerange`) and opens a
file of its own that gets the same number would receive the next dump there. So the descriptor sits high (half the
descriptor limit, at most 2048), where a program's own files seldom reach, and the file's first line
(`DUMP_HEADER`) names this process and that number: the launcher signals a rank only while /proc/PID/fd/N is still
this file (launcher/run/stacks/dump_file.py).
"""

from __future__ import annotations

import faulthandler
import fcntl
import os
import signal
import stat
import threading
import time

from launcher.contract.names import LAUNCHER_PID_VAR, PARENT_DEATH_SIGNAL, STACKS_DIR_VAR, STACKS_FILE, STACKS_SIGNAL
from launcher.prctl import PR_SET_PDEATHSIG, prctl

__all__ = ["die_with_launcher", "answer_stack_requests", "DUMP_HEADER"]

WATCH_SECONDS = 1.0
DUMP_HEADER = "accel-launch stack dumps of pid {pid}, fd {fd}\n"  # the dump file's first line
_DUMP_FD_CEILING = 4096
_taken = threading.Lock()  # held by whichever way noticed first


def die_with_launcher() -> None:
    """Ask Linux for PARENT_DEATH_SIGNAL when the launcher dies, and watch for that death from a thread; then
    take everything the rank started along, and the rank. Only the signal where the launcher is not our own (no
    ACCEL_LAUNCHER_PID); nothing where Linux has no parent-death signal."""
    if not prctl(PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL):
        return
    launcher_pid = os.environ.get(LAUNCHER_PID_VAR)
    if launcher_pid and os.getppid() != int(launcher_pid):
        # The launcher died before prctl took effect: no signal will come, so leave now.
        _terminate_everything()
        return
    if launcher_pid:
        # Before the handler: the launcher reads the handler as "ready for Ctrl-C as SIGINT", and until then sends
        # SIGTERM, so no KeyboardInterrupt can land inside `Thread.start`.
        threading.Thread(target=_watch, args=(int(launcher_pid),), name="accel-launcher-watch", daemon=True).start()
    signal.signal(PARENT_DEATH_SIGNAL, _on_parent_death)
    os.register_at_fork(after_in_child=_death_left_to_the_rank)


def _watch(launcher_pid: int) -> None:
    while os.getppid() == launcher_pid:  # a rank is re-parented the moment its launcher dies
        time.sleep(WATCH_SECONDS)
    _terminate_everything()


def _on_parent_death(_signum: int, _frame: object) -> None:
    """The parent-death signal (Linux sends one per thread of the dying launcher that the rank is handed to; the
    action is taken once)."""
    _terminate_everything()


def _terminate_everything() -> None:
    """SIGTERM to every process this rank started (its process group, and those below it in a session of their
    own, `setsid`, which the group's signal would miss), then to the rank itself, which ends by it unless the
    program handles SIGTERM (a checkpoint on preemption), as it would under a stop. Once, whichever way came
    first."""
    if not _taken.acquire(blocking=False):
        return
    import psutil  # only now: a rank's start does without it

    for process in psutil.Process().children(recursive=True):
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    os.killpg(os.getpgrp(), signal.SIGTERM)  # the rank leads its group: this reaches it too


def _death_left_to_the_rank() -> None:
    """In a process the rank forks (a DataLoader worker, say): the rank's handler is the default again; a
    handler the child set since stays."""
    if signal.getsignal(PARENT_DEATH_SIGNAL) is _on_parent_death:
        signal.signal(PARENT_DEATH_SIGNAL, signal.SIG_DFL)


def answer_stack_requests() -> None:
    """Have faulthandler dump every thread's stack into this rank's file at STACKS_SIGNAL (nothing when the launcher
    gave no folder, or the file cannot be opened)."""
    folder = os.environ.get(STACKS_DIR_VAR)
    if not folder:
        return
    try:
        fd = _dump_file(os.path.join(folder, STACKS_FILE.format(rank=os.environ.get("RANK", "0"))))
    except OSError:
        return
    faulthandler.register(STACKS_SIGNAL, file=fd, all_threads=True)
    os.register_at_fork(after_in_child=_stacks_left_to_the_rank)


def _dump_file(path: str) -> int:
    """The rank's dump file, made afresh (a regular file, never a FIFO's wait: O_NONBLOCK), at a high descriptor,
    its first line DUMP_HEADER."""
    opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC |
                     os.O_NONBLOCK, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(opened).st_mode):
            raise OSError(f"{path} is not a regular file")
        fd = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, max(3, min(os.sysconf("SC_OPEN_MAX"), _DUMP_FD_CEILING) // 2))
    finally:
        os.close(opened)
    try:
        os.write(fd, DUMP_HEADER.format(pid=os.getpid(), fd=fd).encode())
    except OSError:
        os.close(fd)
        raise
    return fd


def _stacks_left_to_the_rank() -> None:
    """In a process the rank forks (a DataLoader worker): the signal's default action again, so only ranks answer."""
    faulthandler.unregister(STACKS_SIGNAL)
