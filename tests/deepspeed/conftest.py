"""Real DeepSpeed on CPU: skipped only where it is not installed (the test extra installs it).

DeepSpeed's CPU communication builds one C++ op (deepspeed_shm_comm) with ninja the first time a rank
calls `deepspeed.initialize` (about a minute on 2 cores). It is built once per machine, before the first
launch, into torch's own extensions cache (TORCH_EXTENSIONS_DIR, else ~/.cache/torch_extensions: the tests'
private XDG_CACHE_HOME must not make every run build it again); later runs load it in milliseconds.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shared_results import computed_once, shared_folder

# Found, not imported: the tests run DeepSpeed in their ranks, and its import (which imports torch) would cost
# every pytest worker 3 s of CPU at collection.
if importlib.util.find_spec("deepspeed") is None:
    pytest.skip("DeepSpeed is not installed (pip install -e '.[test]' installs it)", allow_module_level=True)

BUILD_SHM_OP = Path(__file__).with_name("build_shm_op.py")


@pytest.fixture(scope="session", autouse=True)
def deepspeed_ops_built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point every launch at one extensions cache and build DeepSpeed's CPU op there once: once per session, not
    once per xdist worker (tests/shared_results.py; a worker that asks while another builds waits for that build),
    as a check that imports DeepSpeed costs each worker seconds of CPU even where the op is built."""
    previous = os.environ.get("TORCH_EXTENSIONS_DIR")
    folder = previous or str(Path.home() / ".cache" / "torch_extensions")
    os.environ["TORCH_EXTENSIONS_DIR"] = folder

    def build() -> int:
        return subprocess.run([sys.executable, str(BUILD_SHM_OP)], check=True, capture_output=True,
                              timeout=900).returncode

    computed_once(shared_folder(tmp_path_factory), ["DeepSpeed's CPU op built", folder, sys.executable], build)
    yield
    if previous is None:
        os.environ.pop("TORCH_EXTENSIONS_DIR", None)
