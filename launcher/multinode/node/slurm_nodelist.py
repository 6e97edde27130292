"""Expand a Slurm host list such as `node[01-03,07],login1` into its host names, in Slurm's order.

The hosts are counted before any range is expanded, and a list of more than `NODES` hosts is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from launcher.limits import NODES

__all__ = ["expand_nodelist"]

_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
_NAME = re.compile(r"[A-Za-z0-9._-]*")


def expand_nodelist(text: str) -> tuple[str, ...]:
    """The hosts of `text`; ValueError (with the reason) when it is not a host list."""
    items = list(_split_top_level(text))
    if sum(_count(item) for item in items) > NODES.maximum:
        raise ValueError(f"names more than {NODES.maximum} hosts, the most a job may have")
    hosts = tuple(host for item in items for host in _expand(item))
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


def _count(item: str) -> int:
    """How many hosts `_expand(item)` gives (capped just past the limit), without expanding anything."""
    head, bracket, rest = _head(item)
    if not bracket:
        return 1
    body, _, tail = rest.partition("]")
    count = sum(high - low + 1 for low, high, _ in _ranges(body)) * (_count(tail) if tail else 1)
    return min(count, NODES.maximum + 1)


def _head(item: str) -> tuple[str, str, str]:
    if not item:
        raise ValueError("has an empty host name")
    head, bracket, rest = item.partition("[")
    if not _NAME.fullmatch(head):
        raise ValueError(f"has a bad host name {head!r}")
    return head, bracket, rest


def _expand(item: str) -> list[str]:
    """One comma-free item, every `[...]` group expanded in turn (several groups multiply)."""
    head, bracket, rest = _head(item)
    if not bracket:
        return [head]
    body, _, tail = rest.partition("]")
    suffixes = _expand(tail) if tail else [""]
    return [head + number + suffix for number in _numbers(body) for suffix in suffixes]


def _numbers(body: str) -> Iterator[str]:
    for low, high, width in _ranges(body):
        yield from (str(number).zfill(width) for number in range(low, high + 1))


def _ranges(body: str) -> Iterator[tuple[int, int, int]]:
    """(low, high, digits of low) for each `7` or `01-03` of a bracket's body."""
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"has a bad range {part[:40]!r} (expected like 01-03 or 7)")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise ValueError(f"has a range {part!r} that runs backwards")
        yield low, high, len(match.group(1))
