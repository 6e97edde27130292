"""Results computed once per test session and shared by pytest-xdist's workers: reference runs (plain
`python script.py`, real torchrun) whose result depends neither on the launch path nor on the worker, so the
tests of both paths, on either worker, compare with one run."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's temp folder that every xdist worker of this run sees (the parent of each worker's own)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-results"
    folder.mkdir(exist_ok=True)
    return folder


def computed_once(folder: Path, key: object, compute: Callable[[], Any]) -> Any:
    """`compute()` (a JSON value) for `key`: from the file an earlier call of any worker wrote, else computed here
    under a lock, so that a worker asking meanwhile waits for this result instead of computing it again."""
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    result = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # bounded by the test's timeout; the holder only runs `compute`
        if not result.exists():
            value = compute()
            partial = result.with_suffix(".tmp")
            partial.write_text(json.dumps(value), encoding="utf-8")
            partial.replace(result)
        return json.loads(result.read_text(encoding="utf-8"))
