"""A process's or a thread's line of /proc/PID/stat, parsed in one place (proc(5)).

The command's name stands second, in parentheses, and may hold anything a program sets, spaces and parentheses
too (`a) b (c`), so the fields after it are counted from the line's last `)`: the one the kernel wrote. A leaf:
read by the job's keeper and the reaper on the launcher's side, and by a rank's wait for gloo's threads.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProcStat", "parse_stat", "read_stat"]


@dataclass(frozen=True)
class ProcStat:
    """What the launcher reads of one stat line."""

    pid: int
    name: str  # the command's name (comm), as the kernel keeps it: at most 15 bytes
    state: str  # R running, S sleeping, D disk sleep, Z zombie, X dead, ...
    parent: int
    group: int
    session: int
    start: int  # clock ticks since boot: with the pid, the process's identity

    @property
    def ended(self) -> bool:
        """A zombie or a dead process: it holds its ids, and nothing is left to end."""
        return self.state in ("Z", "X")


def parse_stat(line: bytes) -> ProcStat:
    """The fields of one stat line; ValueError (or IndexError) when it is not one."""
    opened, closed = line.index(b"("), line.rindex(b")")
    fields = line[closed + 1:].split()
    parent, group, session, start = (int(fields[index]) for index in (1, 2, 3, 19))
    return ProcStat(int(line[:opened]), line[opened + 1:closed].decode("utf-8", "replace"),
                    fields[0].decode("ascii"), parent, group, session, start)


def read_stat(path: str) -> ProcStat | None:
    """The stat at `path` (`/proc/PID/stat`, `/proc/self/task/TID/stat`); None when the process is gone, or the
    file unreadable or not a stat line."""
    try:
        with open(path, "rb") as handle:
            return parse_stat(handle.read())
    except (OSError, ValueError, IndexError):
        return None
