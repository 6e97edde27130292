"""Read a DeepSpeed-style hostfile: one `host slots=N` per line, `#` comments and blank lines allowed."""

from __future__ import annotations

import re
from pathlib import Path

from launcher.contract.hosts import HOST_NAME, HostSlots
from launcher.errors import HostfileError
from launcher.limits import NODES, RANKS_PER_NODE, CountError, whole_number
from launcher.shared_files import UnsafeFileError, read_user_text

__all__ = ["parse_hostfile", "parse_hostfile_text"]

_SLOTS = re.compile(r"slots=([0-9]+)")


def parse_hostfile(path: str | Path) -> tuple[HostSlots, ...]:
    """Read (never blocking, at most 4 MiB) and parse the hostfile at `path`, in file order."""
    try:
        text = read_user_text(str(path))
    except UnsafeFileError as exc:
        raise HostfileError(str(path), str(exc)) from None
    return parse_hostfile_text(text, str(path))


def parse_hostfile_text(text: str, path: str = "<hostfile>") -> tuple[HostSlots, ...]:
    """Parse hostfile `text`; `path` only names the file in error messages."""
    entries: list[HostSlots] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split("#", 1)[0].split()
        if not tokens:
            continue
        entry = _parse_line(tokens, path, number)
        if entry.host in first_line:
            raise HostfileError(
                path, f"host {entry.host!r} is listed again (first on line {first_line[entry.host]})", number
            )
        first_line[entry.host] = number
        entries.append(entry)
        if len(entries) > NODES.maximum:
            raise HostfileError(path, f"lists more than {NODES.maximum} hosts, the most a job may have", number)
    if not entries:
        raise HostfileError(path, "lists no hosts (expected lines like 'worker-0 slots=8')")
    return tuple(entries)


def _parse_line(tokens: list[str], path: str, number: int) -> HostSlots:
    host = tokens[0]
    if not HOST_NAME.fullmatch(host):
        raise HostfileError(path, f"{host!r} is not a host name", number)
    if len(tokens) == 1:
        raise HostfileError(path, f"host {host!r} has no slots=N", number)
    if len(tokens) > 2:
        raise HostfileError(path, f"unexpected {' '.join(tokens[2:])!r} after {tokens[1]!r}", number)
    match = _SLOTS.fullmatch(tokens[1])
    if match is None:
        raise HostfileError(path, f"expected slots=N after {host!r}, got {tokens[1]!r}", number)
    try:
        slots = whole_number(match.group(1), "slots", RANKS_PER_NODE)
    except CountError as exc:
        raise HostfileError(path, f"host {host!r} slots={exc.value}: {exc.expected}", number) from None
    if slots < 1:
        raise HostfileError(path, f"host {host!r} needs slots of at least 1, got {slots}", number)
    return HostSlots(host, slots)
