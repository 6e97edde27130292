"""Expand a Slurm host list such as `node[01-03,07],login1` into its host names, in Slurm's order."""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["expand_nodelist"]

_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_NAME = re.compile(r"[A-Za-z0-9._-]*")


def expand_nodelist(text: str) -> tuple[str, ...]:
    """The hosts of `text`; ValueError (with the reason) when it is not a host list."""
    hosts = tuple(host for item in _split_top_level(text) for host in _expand(item))
    if not hosts:
        raise ValueError("names no hosts")
    return hosts


def _split_top_level(text: str) -> Iterator[str]:
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError("has a '[' inside brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("has a ']' without its '['")
        elif char == "," and depth == 0:
            yield text[start:index]
            start = index + 1
    if depth:
        raise ValueError("has a '[' without its ']'")
    yield text[start:]


def _expand(item: str) -> list[str]:
    """One comma-free item, every `[...]` group expanded in turn (several groups multiply)."""
    if not item:
        raise ValueError("has an empty host name")
    head, bracket, rest = item.partition("[")
    if not _NAME.fullmatch(head):
        raise ValueError(f"has a bad host name {head!r}")
    if not bracket:
        return [head]
    body, _, tail = rest.partition("]")
    suffixes = _expand(tail) if tail else [""]
    return [head + number + suffix for number in _numbers(body) for suffix in suffixes]


def _numbers(body: str) -> Iterator[str]:
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"has a bad range {part!r} (expected like 01-03 or 7)")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"has a range {part!r} that runs backwards")
        yield from (str(number).zfill(len(low)) for number in range(int(low), int(high) + 1))
