"""Fixtures for the accelerator tests: a fresh detection per test, faked hardware, a spy on the registry walk."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from accelerators import backends
from accelerators.accelerator import Accelerator, registered
from accelerators.cpu import CPUAccelerator
from accelerators.detect import get_accelerator

FakeDevices = Callable[[Mapping[str, int]], None]


@pytest.fixture(autouse=True)
def fresh_detection() -> Iterator[None]:
    """Each test detects its accelerator anew."""
    get_accelerator.cache_clear()
    yield
    get_accelerator.cache_clear()


@pytest.fixture
def fake_devices(monkeypatch: pytest.MonkeyPatch) -> FakeDevices:
    """Fake the hardware at the one seam: every device accelerator's is_available/device_count.

    Accelerators named in the mapping get that many devices; every other one (cpu aside) reports none,
    so the result is the same on a machine with real GPUs.
    """

    def fake(counts: Mapping[str, int]) -> None:
        for cls in registered():
            if cls.name == "cpu":
                continue
            count = counts.get(cls.name, 0)
            monkeypatch.setattr(cls, "is_available", classmethod(lambda c, n=count: n > 0))
            monkeypatch.setattr(cls, "device_count", classmethod(lambda c, n=count: n))

    return fake


@pytest.fixture
def registry_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each walk of dynamo's registry (a spy on backends.registered_backends; the walk stays real)."""
    walks: list[str] = []
    real = backends.registered_backends

    def spy() -> tuple[str, ...]:
        walks.append("walk")
        return real()

    monkeypatch.setattr(backends, "registered_backends", spy)
    return walks


@pytest.fixture
def cpu() -> Accelerator:
    """A fresh CPU accelerator object."""
    return CPUAccelerator()


def _run_python(code: str, extra_env: Mapping[str, str] | None = None, pythonpath: Path | None = None) -> str:
    """Run `code` in a fresh interpreter (this venv's python); return its stdout, failing on a non-zero exit.

    ACCEL_ACCELERATOR defaults to cpu there, so the result does not depend on this machine's GPUs.
    """
    env = {**os.environ, "ACCEL_ACCELERATOR": "cpu", **(extra_env or {})}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def run_python() -> Callable[..., str]:
    """`run_python(code, extra_env=None, pythonpath=None)`: stdout of `code` run in a fresh interpreter."""
    return _run_python
