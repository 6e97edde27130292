"""A rank the kernel's OOM killer took is said to be out of memory: a real memory cgroup with a small limit holds
the launch (made here as root, v1 or v2, and removed afterwards), and one rank takes memory past it."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher.run.failure.oom_kill import memory_cgroup

from .jobs import script

pytestmark = pytest.mark.usefixtures("launch_path")

LIMIT_MIB = 768  # above a launcher that imports torch (the engine path), far below what the rank takes


@pytest.fixture
def limited_cgroup() -> Iterator[Path]:
    """A new memory cgroup below this process's own, limited to LIMIT_MIB without swap; skipped where none can be
    made (not root, no memory controller)."""
    own = memory_cgroup()
    if own is None or os.geteuid() != 0:
        pytest.skip("no memory cgroup can be made here (needs root and a memory controller)")
    folder = own.folder / f"accel-oom-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
        limit = str(LIMIT_MIB << 20)
        if own.version == 2:
            (folder / "memory.max").write_text(limit)
            (folder / "memory.swap.max").write_text("0")
        else:
            (folder / "memory.limit_in_bytes").write_text(limit)
            if (folder / "memory.memsw.limit_in_bytes").exists():
                (folder / "memory.memsw.limit_in_bytes").write_text(limit)
    except OSError as exc:
        if folder.exists():
            folder.rmdir()
        pytest.skip(f"no memory cgroup can be made here: {exc}")
    yield folder
    deadline = time.monotonic() + 30
    while (folder / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.1)
    folder.rmdir()


@pytest.mark.timeout(240)
def test_a_rank_the_oom_killer_took_is_said_to_be_out_of_memory(start_job, limited_cgroup):
    job = start_job(["--nproc-per-node", "2", script("eat_memory.py")],
                    command=(sys.executable, script("in_cgroup.py"), str(limited_cgroup), sys.executable, "-m",
                             "launcher"))
    finished = job.finish()

    assert finished.returncode == 137, finished.stderr
    assert ("rank 1 on " in finished.stderr and "failed first, with signal SIGKILL (9): out of memory, the kernel's "
            "OOM killer ended it (memory cgroup /") in finished.stderr
    assert f"{limited_cgroup.name}, limit {LIMIT_MIB} MiB); the other ranks were stopped" in finished.stderr
