"""The node's facts cache is trusted only when it is the user's own: a planted backend list does not let a
backend through the launcher or the ranks (the in-process cases: tests/rank/test_node_facts_cache.py)."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import asdict

import pytest

from accelerators.torch_build import torch_build
from launcher.rank import node_facts_cache as facts_cache
from tests.lock_holder import lock_held_elsewhere

from .jobs import assert_refused, script

SHORT_BOUND = 1.0
# The launcher with the lock's bound at 1 s (the module's LOCK_WAIT_SECONDS, set before it runs): the bound, not
# its 10 s, is the point.
SHORT_LOCK_WAIT = (sys.executable, "-c", "import sys\nimport launcher.rank.node_facts_cache as facts_cache\n"
                   f"facts_cache.LOCK_WAIT_SECONDS = {SHORT_BOUND}\n"
                   "sys.argv = ['accel-launch', *sys.argv[1:]]\nfrom launcher.cli.start import main\nmain()\n")


@pytest.mark.timeout(120)
def test_a_world_writable_cache_with_a_planted_backend_does_not_let_that_backend_pass(run_job, figures, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "ACCEL_ACCELERATOR": "cpu"}
    build = torch_build()
    key = facts_cache.cache_key("cpu", asdict(build) if build is not None else None)
    path = facts_cache.cache_file(facts_cache.cache_dir(env), key)
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_text(json.dumps({"key": key, "supported_backends": ["eager", "inductor", "planted_backend"]}))
    path.chmod(0o666)
    temp = tmp_path / "tmp"
    temp.mkdir()

    finished, job = run_job(["--compile-backend", "planted_backend", script("ok.py")], {**env, "TMPDIR": str(temp)})

    assert_refused(finished, job, temp, ["compile backend 'planted_backend' (from --compile-backend)",
                                         "is not supported on cpu"])
    info = os.lstat(path)
    assert stat.S_IMODE(info.st_mode) == 0o600 and "planted_backend" not in path.read_text()  # rebuilt, own
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(150)
def test_a_process_holding_the_cache_lock_delays_a_launch_only_by_the_bounded_wait(start_job, figures, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "ACCEL_ACCELERATOR": "cpu"}
    build = torch_build()
    key = facts_cache.cache_key("cpu", asdict(build) if build is not None else None)
    path = facts_cache.cache_file(facts_cache.cache_dir(env), key)  # missing: the launch must walk the registry
    path.parent.mkdir(mode=0o700, parents=True)

    with lock_held_elsewhere(path.with_suffix(".lock")):
        job = start_job(["--nproc-per-node", "2", script("ok.py")], env, command=SHORT_LOCK_WAIT)
        finished = job.finish(timeout=120)

    assert finished.returncode == 0, finished.stderr
    assert finished.seconds >= SHORT_BOUND  # the launcher waited out the held lock
    assert sorted(job.started_ranks()) == [0, 1]
    assert facts_cache.load_backends(path, key) is not None  # stored without the lock, for the next launch
    figures(status=finished.returncode, seconds=finished.seconds)
