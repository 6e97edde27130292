"""One outcome for every catchable signal to the launcher, from its first line to its last.

The table is in docs/RELIABILITY.md ("Every signal has one outcome"):

- stop (every signal whose default is to end the process, but for the crash signals below): the job
  stops with one line and exit 128+N. How depends on the moment: before any rank can exist, the launcher undoes
  what it made and exits at once (`stop_now`); from the ranks' start, the job's stop decides, one object that its
  driver makes and hands on (launcher/run/scope/job_signals.py): the first stop signal is raised where the driver is,
  which stops every rank within --grace-period; one that comes while the ranks are being stopped, or after,
  cuts the grace period short (SIGKILL to what is left) and changes nothing else.
- forward (SIGUSR1, SIGUSR2): sent on to every running rank's own process; the job goes on.
- ignore (SIGPIPE, SIGXFSZ, as in every Python program): an output that cannot be written never ends the job.
- default: job control, SIGCHLD, SIGURG, SIGWINCH, and the signals of a crash of the launcher itself
  (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS) keep the meaning they had.

The first stop signal names the outcome, even when another came before Python ran its handler (Python runs pending
handlers lowest number first: SIGTERM then SIGINT within a few ms would otherwise end as SIGINT): the order comes
from Python's wakeup descriptor, to which its C handler writes each signal's number as it arrives.
A stop or forwarded signal the launcher was started with ignored (nohup's SIGHUP, a background job's SIGINT)
stays ignored. This module is the launcher's first import: it imports only small standard modules, and the
launcher's table of names (launcher/contract/names.py, which imports nothing).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from launcher.contract.names import SIGNAL_STATUS_BASE

__all__ = ["STOP", "FORWARDED", "IGNORED", "DEFAULT", "install_signal_rules", "stop_action", "forward_action",
           "set_stop_action", "stop_now", "stop_looking", "add_cleanup", "clean_up", "signals_deferred", "start_thread",
           "signal_name", "stop_outcome", "exit_status"]

S = signal.Signals
FORWARDED = frozenset({S.SIGUSR1, S.SIGUSR2})
IGNORED = frozenset({S.SIGPIPE, S.SIGXFSZ})
DEFAULT = frozenset({S.SIGTSTP, S.SIGTTIN, S.SIGTTOU, S.SIGCONT, S.SIGCHLD, S.SIGURG, S.SIGWINCH,
                     S.SIGSEGV, S.SIGBUS, S.SIGFPE, S.SIGILL, S.SIGABRT, S.SIGTRAP, S.SIGSYS})
STOP = frozenset(signal.valid_signals() - FORWARDED - IGNORED - DEFAULT - {S.SIGKILL, S.SIGSTOP})

StopAction = Callable[[int], None]
ForwardAction = Callable[[int], int]  # sends the signal on; returns to how many ranks


def stop_now(signum: int) -> None:
    """Before any rank can exist: undo what the launcher made, say so in one line, exit 128+N."""
    clean_up()
    status, message = stop_outcome(signum, "no rank was left running")
    _write_line(f"accel-launch: {message}")
    os._exit(status)


def stop_looking(prog: str) -> None:
    """From now on a stop signal ends this command, which only looks at a running job (`stacks`, `status`): 128+N
    and one line saying the job goes on, where a launch's would say that no rank was left running."""
    def stop(signum: int) -> None:
        clean_up()
        status, message = stop_outcome(signum, "the job goes on")
        _write_line(f"{prog}: {message}")
        os._exit(status)

    set_stop_action(stop)


def _to_nobody(_signum: int) -> int:
    return 0


class _Now:
    """What a signal does now (`stop_now` until the job's stop takes over), and the handler's own state: one per
    process, as a signal handler is."""

    stop: StopAction = stop_now
    forward: ForwardAction = _to_nobody
    stop_instead: frozenset[int] = frozenset()
    started_ignored: frozenset[int] | None = None
    cleanups: list[Callable[[], None]] = []
    deferring: int = 0  # inside signals_deferred: a signal waits for the block to end
    deferred: list[int] = []
    arrivals: int | None = None  # the read end of Python's wakeup descriptor: signal numbers in arrival order


def install_signal_rules() -> None:
    """Give every stop and forwarded signal its handler (those the launcher was started with ignored stay
    ignored) and ignore SIGPIPE and SIGXFSZ."""
    if _Now.started_ignored is None:
        _watch_arrivals()
        _Now.started_ignored = frozenset(sig for sig in STOP | FORWARDED if signal.getsignal(sig) == signal.SIG_IGN)
    for sig in STOP | FORWARDED | IGNORED:
        if sig in IGNORED or sig in _Now.started_ignored:
            _set(sig, signal.SIG_IGN)
        elif sig in STOP or sig in FORWARDED:
            _set(sig, _on_signal)


def set_stop_action(action: StopAction) -> None:
    """From now on a stop signal does `action`."""
    _Now.stop = action


@contextmanager
def stop_action(action: StopAction) -> Iterator[None]:
    """Within the block a stop signal does `action`; after it, what it did before."""
    previous = _Now.stop
    _Now.stop = action
    try:
        yield
    finally:
        _Now.stop = previous


@contextmanager
def forward_action(action: ForwardAction, stop_instead: Iterable[int] = ()) -> Iterator[None]:
    """Within the block SIGUSR1 and SIGUSR2 go to `action` (those in `stop_instead`, which the user named
    in --signals-to-handle, stop the job as torchrun does); outside it no rank runs to receive them."""
    _Now.forward, _Now.stop_instead = action, frozenset(stop_instead)
    try:
        yield
    finally:
        _Now.forward, _Now.stop_instead = _to_nobody, frozenset()


def add_cleanup(cleanup: Callable[[], None]) -> None:
    """Have an immediate end (a stop signal before any rank, or an internal error) run `cleanup`."""
    if cleanup not in _Now.cleanups:
        _Now.cleanups.append(cleanup)


def clean_up() -> None:
    """Run every cleanup; one that fails does not keep the others from running."""
    for cleanup in _Now.cleanups:
        try:
            cleanup()
        except Exception:  # noqa: BLE001  (ending anyway: undo what can be undone)
            pass


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block (in the main thread) a signal that comes waits, and acts once the block has ended: for a
    few statements that must not be cut in two. A signal mask is not enough for that: another thread of the
    launcher (one of torch's) can take the signal, and Python still runs the handler in the main thread at once."""
    _Now.deferring += 1
    try:
        yield
    finally:
        _Now.deferring -= 1
        if not _Now.deferring:
            deferred, _Now.deferred = _Now.deferred, []
            for signum in deferred:
                _on_signal(signum, None)


def start_thread(thread: threading.Thread) -> None:
    """Start one of the launcher's threads (from the main thread) with signals deferred: a stop raised inside
    `Thread.start`, after the thread started and before Python recorded it (CPython 3.11), left the thread to die
    of a KeyError traceback on the terminal."""
    with signals_deferred():
        thread.start()


def _watch_arrivals() -> None:
    """Have Python's C handler write each signal's number to a pipe as the signal arrives (`_first_arrived`)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except ValueError:  # not the main thread: the handlers' own order stands
        os.close(read_end)
        os.close(write_end)
        return
    _Now.arrivals = read_end


def _first_arrived(signum: int) -> int:
    """The stop signal that arrived first of those that came since the last handler ran; `signum` when none."""
    if _Now.arrivals is None:
        return signum
    try:
        arrived = os.read(_Now.arrivals, 4096)
    except OSError:  # nothing written since: BlockingIOError
        return signum
    return next((sig for sig in arrived if sig in STOP or sig in _Now.stop_instead), signum)


def _on_signal(signum: int, _frame: object) -> None:
    if _Now.deferring:
        _Now.deferred.append(signum)
        return
    if signum in STOP or signum in _Now.stop_instead:
        _Now.stop(_first_arrived(signum))
    elif _Now.forward(signum) == 0:
        _write_line(f"accel-launch: note: {signal_name(signum)} came while no rank was running; it was not passed on")


def _set(sig: int, handler: object) -> None:
    try:
        signal.signal(sig, handler)
    except (OSError, ValueError):  # a signal this system does not let a program handle
        pass


def signal_name(signum: int) -> str:
    """SIGTERM, or SIGRTMIN+3 for a real-time signal (which has no name of its own)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}"


def stop_outcome(signum: int, what: str) -> tuple[int, str]:
    """A launcher stopped by signal N: status 128+N, and `stopped by SIGTERM; <what>`."""
    return SIGNAL_STATUS_BASE + signum, f"stopped by {signal_name(signum)}; {what}"


def exit_status(exitcode: int) -> int:
    """A process's status as a shell shows it: 128+N for a signal N (Python gives it as -N)."""
    return SIGNAL_STATUS_BASE - exitcode if exitcode < 0 else exitcode


def _write_line(line: str) -> None:
    """One line on stderr, straight to the descriptor: safe however the interrupted code left sys.stderr."""
    try:
        os.write(2, (line + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
