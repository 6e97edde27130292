"""Which processes are the job's, for the keeper (launcher/run/job_keeper.py): a census of /proc that learns, while
the launcher lives, every process below it and every session and process group they lead, so that at the launcher's
death they are known whatever they did since: left the rank's session or group, dropped the launcher's mark from
their environment, lost their parent (docs/RELIABILITY.md, round six).

A look reads /proc/PID/stat of every process (parent, group, session, start time; no environment) and finds, from
what the census knows, the job's processes now:
- the launcher's children and the children of the job's processes (the launcher is the subreaper of its ranks:
  while it lives, what a rank leaves behind comes back to it, so everything the job starts is below it);
- the members of a session or process group one of the job's processes leads, or led;
- after the launcher's death only (`marked`), a process that carries the launcher's mark in its environment, as
  a backstop for one made since the last look (the environment is read only then: a look stays cheap).
A process is known with its start time, so a recycled pid is never the job's, and `kill` checks it again through a
pidfd; a session or group is known while it has members (Linux gives no new process the id of a session or group
that still has one). The launcher's own session and group, and the keeper, are never the job's.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from launcher.contract.names import LAUNCHER_PID_VAR

__all__ = ["JobCensus", "ProcStat", "kill", "proc_stat"]


@dataclass(frozen=True)
class ProcStat:
    """What a look needs of one process, from /proc/PID/stat."""

    pid: int
    parent: int
    group: int
    session: int
    start: int  # clock ticks since boot: with the pid, the process's identity
    ended: bool  # a zombie: it holds its ids, and nothing is left to end


def proc_stat(pid: int) -> ProcStat | None:
    """`pid`'s stat, or None when it is gone (or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
        fields = text.rpartition(b")")[2].split()  # the command's name, in parentheses, may hold anything
        return ProcStat(pid, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]), fields[0] in (b"Z", b"X"))
    except (OSError, ValueError, IndexError):
        return None


def kill(pid: int, start: int) -> None:
    """SIGKILL `pid` if it is still the process that started at `start` (checked through a pidfd: no race with a
    recycled pid)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        stat = proc_stat(pid)
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
        launcher = proc_stat(launcher_pid)
        self._launcher_start = launcher.start if launcher is not None else None
        # The launcher's own session and group are the user's shell's: never the job's.
        self._foreign = {launcher.session, launcher.group} if launcher is not None else set()

    def look(self, marked: bool = False) -> dict[int, int]:
        """The job's live processes now (pid: start time); what it found is known from now on."""
        table = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != self._own and (stat := proc_stat(int(name))) is not None:
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
