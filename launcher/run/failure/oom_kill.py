"""Whether the kernel's OOM killer ended a rank: a rank killed by SIGKILL while the OOM-kill counter of the memory
cgroup it runs in went up (cgroup v2 `memory.events`, v1 `memory.oom_control`: `oom_kill`) ran out of memory, with
the limit where one can be read (`memory.max`, v1 `memory.limit_in_bytes`, the smallest up to the hierarchy's
root). The ranks start in the launcher's own cgroup, so the launcher reads its own: once when a rank group is
made, again when a rank was killed. Nothing is read on a machine without a memory cgroup.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OomWatch", "MemoryCgroup", "memory_cgroup"]

_UNLIMITED = 1 << 60  # v1 writes "no limit" as a number near 2**63


@dataclass(frozen=True)
class MemoryCgroup:
    """A memory cgroup: its folder, the hierarchy's root folder, and which version it is."""

    folder: Path
    root: Path
    version: int

    def oom_kills(self) -> int | None:
        """The cgroup's count of OOM kills (None: unreadable)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.folder / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def limit(self) -> int | None:
        """The smallest memory limit from this cgroup up to the root, in bytes (None: none)."""
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        limits = []
        folder = self.folder
        while True:
            try:
                text = (folder / name).read_text().strip()
                if text.isdigit() and int(text) < _UNLIMITED:
                    limits.append(int(text))
            except OSError:
                pass
            if folder == self.root or folder == folder.parent:
                break
            folder = folder.parent
        return min(limits) if limits else None

    def describe(self) -> str:
        """`memory cgroup /job/acceltest, limit 600 MiB`."""
        limit = self.limit()
        shown = f"/{self.folder.relative_to(self.root)}".rstrip("/.") or "/"
        return f"memory cgroup {shown}" + (f", limit {limit / (1 << 20):.0f} MiB" if limit is not None else "")


def memory_cgroup(pid: str = "self") -> MemoryCgroup | None:
    """The memory cgroup of process `pid`, from /proc (v1's memory hierarchy first, else v2's); None without one."""
    try:
        membership = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mounts = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return None
    places = {}
    for line in membership:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        places["v2" if hierarchy == "0" and not controllers else controllers] = path
    for line in mounts:
        fields, _, described = line.partition(" - ")
        mount, (kind, _, options) = fields.split(), (described.split() + ["", "", ""])[:3]
        if len(mount) < 5:
            continue
        mount_root, mount_point = mount[3], Path(mount[4])
        if kind == "cgroup" and "memory" in options.split(","):
            path = next((path for controllers, path in places.items() if "memory" in controllers.split(",")), None)
            version = 1
        elif kind == "cgroup2" and "v2" in places:
            path, version = places["v2"], 2
        else:
            continue
        if path is None:
            continue
        folder = mount_point / path.removeprefix(mount_root if mount_root != "/" else "").lstrip("/")
        if (folder / ("memory.events" if version == 2 else "memory.oom_control")).exists():
            return MemoryCgroup(folder, mount_point, version)
    return None


class OomWatch:
    """The launcher's memory cgroup and its OOM-kill count when a rank group is made."""

    def __init__(self) -> None:
        self._cgroup = memory_cgroup()
        self._before = self._cgroup.oom_kills() if self._cgroup is not None else None

    def killed_by_oom(self, exitcode: int) -> str | None:
        """For a rank that ended with `exitcode`: what says it ran out of memory (None: nothing does)."""
        if exitcode != -signal.SIGKILL or self._cgroup is None or self._before is None:
            return None
        now = self._cgroup.oom_kills()
        if now is None or now <= self._before:
            return None
        return f"the kernel's OOM killer ended it ({self._cgroup.describe()})"
