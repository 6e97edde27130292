"""A rank answers STACKS_SIGNAL with every thread's Python stack (docs/CONTRACT.md section 8).

One C call at the rank's start: faulthandler, registered for the signal, writes the stacks from its C handler into
the rank's file in the launcher's private folder, however the rank is blocked (a gloo collective, a store's wait,
a lock held in C++), and the rank goes on. No thread, no poll, nothing imported but faulthandler, which is built
into the interpreter. A program that sets its own handler for the signal keeps it: the signal then reaches its
handler, and the launcher says the rank did not answer. A process the rank forks does not answer.
"""

from __future__ import annotations

import faulthandler
import os

from launcher.contract.names import STACKS_DIR_VAR, STACKS_FILE, STACKS_SIGNAL

__all__ = ["answer_stack_requests"]


def answer_stack_requests() -> None:
    """Have faulthandler dump every thread's stack into this rank's file at STACKS_SIGNAL (nothing when the launcher
    gave no folder, or the file cannot be opened)."""
    folder = os.environ.get(STACKS_DIR_VAR)
    if not folder:
        return
    name = STACKS_FILE.format(rank=os.environ.get("RANK", "0"))
    try:
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except OSError:
        return
    faulthandler.register(STACKS_SIGNAL, file=fd, all_threads=True)
    os.register_at_fork(after_in_child=_leave_to_the_rank)


def _leave_to_the_rank() -> None:
    """In a process the rank forks (a DataLoader worker): the signal's default action again, so only ranks answer."""
    faulthandler.unregister(STACKS_SIGNAL)
