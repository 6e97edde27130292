"""What outlives a SIGKILLed launcher: a small keeper process that ends every process of the job within the grace
window after the launcher's death, whatever those processes do with SIGTERM, their session, group or environment
(docs/RELIABILITY.md, "Launcher death" and round six).

The launcher starts the keeper in a session of its own (a Ctrl-C at the terminal, or a signal to the launcher's
group, does not reach it) with the read end of a pipe as its stdin; the launcher alone holds the write end, so
the keeper's read ends when the launcher does, however it ends. While it waits, the keeper takes the job's census
once a second (`JobCensus`). At the launcher's death the ranks' own watch (launcher/rank/launcher_link.py) sends
SIGTERM through what they started; the keeper waits for the job to go, and SIGKILLs what is left when the grace
window ends.

The launcher watches its keeper (a thread waiting for it): a keeper that dies (a SIGKILL, the OOM killer) is
replaced at once, and the launcher says so in one line; when none can be started, the launcher says so and stops
the job as a SIGTERM would. A launcher that ends well has swept its job, and ends the keeper first (`keeper`).

The census reads /proc/PID/stat of every process (no environment: a look stays cheap) and knows, by pid and start
time (a recycled pid is never the job's; `_kill` checks it again through a pidfd), the launcher's children (it is the
subreaper of its ranks: while it lives, everything the job starts is below it), their children, and the members of a
session or process group one of them leads or led, kept while it has members (Linux gives no new process the id of
a session or group that has one). The launcher's own session and group are never the job's. After the death only,
it also takes what carries the launcher's mark in its environment: a backstop for what came since the last look.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from launcher.contract.names import LAUNCHER_PID_VAR
from launcher.proc_stat import ProcStat, read_stat
from launcher.run.scope.reaper import spare, unspare
from launcher.run.group.terminal_lines import terminal
from launcher.signal_rules import start_thread

__all__ = ["MOST_STARTS", "keeper"]

_CENSUS_SECONDS = 1.0  # while the launcher lives
# In the grace window; not PROCESS_CHECK_SECONDS (launcher/contract/names.py): each look walks every process's
# /proc entry, and nothing waits on the keeper's answer, so it looks half as often.
_POLL_SECONDS = 0.1
_KILL_PASSES = 5  # a process forking while it is killed leaves a child the next pass finds
MOST_STARTS = 10  # a keeper that keeps dying is not started again for good: the job ends instead


@contextmanager
def keeper(grace_seconds: float) -> Iterator[None]:
    """Within the block, a keeper ends the job's processes `grace_seconds` after this launcher's death."""
    watched = _Watched(grace_seconds)
    try:
        start_thread(threading.Thread(target=watched.watch, name="accel-keeper-watch", daemon=True))
        yield
    finally:
        watched.end()


class _Watched:
    """The job's keeper as the launcher holds it: started, restarted when it dies, ended at the job's end."""

    def __init__(self, grace_seconds: float) -> None:
        self._grace, self._lock, self._ending, self._starts = grace_seconds, threading.Lock(), False, 0
        self._process, self._write_end = self._start()

    def _start(self) -> tuple[subprocess.Popen, int]:
        """A keeper for this launcher, and the write end of its pipe (never written: its end is the signal)."""
        read_end, write_end = os.pipe()
        environ = {key: value for key, value in os.environ.items() if key != LAUNCHER_PID_VAR}
        try:
            process = subprocess.Popen([sys.executable, "-P", "-m", __name__, str(os.getpid()), repr(self._grace)],
                                       stdin=read_end, stdout=subprocess.DEVNULL, env=environ, start_new_session=True)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        spare(process.pid)
        self._starts += 1
        return process, write_end

    def watch(self) -> None:
        """Until the job's end: wait for the keeper; one that died is replaced, and the launcher says so."""
        while True:
            process = self._process
            status = process.wait()
            with self._lock:
                if self._ending:
                    return
                os.close(self._write_end)
                unspare(process.pid)
                how = f"killed by {_signal_name(-status)}" if status < 0 else f"exit status {status}"
                try:
                    if self._starts >= MOST_STARTS:
                        raise OSError(f"{MOST_STARTS} keepers were started already")
                    self._process, self._write_end = self._start()
                except OSError as exc:
                    terminal(2).note(f"the job's keeper (pid {process.pid}) died ({how}) and no other could be "
                                     f"started ({exc}): stopping the job (nothing would end it should the launcher "
                                     "die)")
                    self._ending = True
                    os.kill(os.getpid(), signal.SIGTERM)
                    return
                terminal(2).note(f"the job's keeper (pid {process.pid}) died ({how}); started another (pid "
                                 f"{self._process.pid}), which ends the job should the launcher die")

    def end(self) -> None:
        """End the keeper, before its pipe closes: a launcher that ends well leaves it nothing to do."""
        with self._lock:
            ending, self._ending = self._ending, True
            if not ending:
                self._process.kill()
                self._process.wait()
                os.close(self._write_end)


def _signal_name(signum: int) -> str:
    """SIGKILL, or `signal 40` for a number Python has no name for (a real-time signal)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _keep(launcher_pid: int, grace_seconds: float) -> None:
    """Take the job's census until the launcher's end; then wait for the job's processes to go, and SIGKILL what is
    left at the window's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    census = JobCensus(launcher_pid)
    pipe = select.poll()
    pipe.register(0, select.POLLIN)
    census.look()
    while not (pipe.poll(_CENSUS_SECONDS * 1000) and not os.read(0, 4096)):
        census.look()
    deadline = time.monotonic() + grace_seconds
    while census.look(marked=True) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    for _ in range(_KILL_PASSES):
        left = census.look(marked=True)
        if not left:
            return
        for pid, start in left.items():
            _kill(pid, start)


def _kill(pid: int, start: int) -> None:
    """SIGKILL `pid` if it is still the process that started at `start` (checked through a pidfd: no race with a
    recycled pid)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        stat = read_stat(f"/proc/{pid}/stat")
        if stat is not None and stat.start == start:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


class JobCensus:
    """What one keeper knows of the job of the launcher `launcher_pid`; `look` learns and answers."""

    def __init__(self, launcher_pid: int) -> None:
        self._launcher, self._own = launcher_pid, os.getpid()
        self._known: dict[int, int] = {}  # pid: start time
        self._sessions: set[int] = set()
        self._groups: set[int] = set()
        launcher = read_stat(f"/proc/{launcher_pid}/stat")
        self._launcher_start = launcher.start if launcher is not None else None
        # The launcher's own session and group are the user's shell's: never the job's.
        self._foreign = {launcher.session, launcher.group} if launcher is not None else set()

    def look(self, marked: bool = False) -> dict[int, int]:
        """The job's live processes now (pid: start time); what it found is known from now on."""
        table = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != self._own and (stat := read_stat(f"/proc/{name}/stat")) is not None:
                table[stat.pid] = stat
        self._known = {pid: start for pid, start in self._known.items() if pid in table and table[pid].start == start}
        below: dict[int, set[int]] = {}  # a pid: its children, and the members of a session or group it is the id of
        for stat in table.values():
            for above in (stat.parent, stat.session, stat.group):
                below.setdefault(above, set()).add(stat.pid)
        found = [*self._known, *self._members(table, self._sessions | self._groups)]
        launcher = table.get(self._launcher)
        if launcher is not None and launcher.start == self._launcher_start:  # not a process that got its pid since
            found += [stat.pid for stat in table.values() if stat.parent == self._launcher]
        if marked:
            found += [pid for pid in table if pid not in self._known and _marked(pid, self._launcher)]
        seen = {self._launcher}
        while found:
            pid = found.pop()
            if pid not in seen:
                seen.add(pid)
                self._known[pid] = table[pid].start
                found += below.get(pid, ())
        self._sessions = {stat.session for stat in table.values()
                          if stat.session in self._sessions or stat.session in self._known} - self._foreign
        self._groups = {stat.group for stat in table.values()
                        if stat.group in self._groups or stat.group in self._known} - self._foreign
        return {pid: start for pid, start in self._known.items() if not table[pid].ended}

    @staticmethod
    def _members(table: dict[int, ProcStat], ids: set[int]) -> list[int]:
        return [stat.pid for stat in table.values() if stat.session in ids or stat.group in ids]


def _marked(pid: int, launcher_pid: int) -> bool:
    """Whether `pid`'s environment holds the launcher's mark."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return False
    return f"{LAUNCHER_PID_VAR}={launcher_pid}".encode() in environ.split(b"\0")

if __name__ == "__main__":
    _keep(int(sys.argv[1]), float(sys.argv[2]))
