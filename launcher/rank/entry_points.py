"""The entry points of one group, found as importlib.metadata finds them, without importing it.

Importing importlib.metadata (and the email parser it brings) took 30-60 ms of a rank's 150 ms start on
the 2-core bench machine; the rank only needs the `torch_dynamo_backends` lines for its facts key. The
installed distributions are the `*.dist-info` and `*.egg-info` folders in the folders of `sys.path`,
and each lists its entry points in an INI-style `entry_points.txt`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

__all__ = ["entry_point_pairs"]

_INFO_SUFFIXES = (".dist-info", ".egg-info")


def entry_point_pairs(group: str, path: Iterable[str] | None = None) -> list[list[str]]:
    """Sorted `[name, value]` pairs of `group` in every distribution on `path` (default: sys.path)."""
    pairs: list[list[str]] = []
    for folder in sys.path if path is None else path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(_INFO_SUFFIXES):
                pairs.extend(_group_pairs(os.path.join(folder or ".", name, "entry_points.txt"), group))
    return sorted(pairs)


def _group_pairs(path: str, group: str) -> list[list[str]]:
    """The `name = value` lines under `[group]` in the file at `path` (none when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    pairs, inside = [], False
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line.strip("[]") == group  # as importlib.metadata reads a section name
        elif inside and "=" in line:
            name, value = line.split("=", 1)
            pairs.append([name.strip(), value.strip()])
    return pairs
