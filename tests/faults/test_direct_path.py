"""What only the direct path has to prove (docs/ARCHITECTURE.md, "Two paths"): the launcher never imports torch,
launches at once never meet on one port, and a rank 0 (the store's host) that dies early ends the job with its
status. Everything else is proved on both paths by the tests that ask for `launch_path`."""

from __future__ import annotations

import json
import sys

import pytest

from tests.launches import SCRIPTS

from .jobs import script, wait_gone

# The launcher with an audit hook that notes, in $RECORD_DIR/launcher-imported-torch, its own import of torch.
WATCHED_LAUNCHER = (sys.executable, "-c",
                    "import os, sys\n"
                    "def hook(event, args):\n"
                    "    if event == 'import' and args[0] == 'torch':\n"
                    "        open(os.path.join(os.environ['RECORD_DIR'], 'launcher-imported-torch'), 'w').close()\n"
                    "sys.addaudithook(hook)\n"
                    "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
                    "from launcher.cli.start import main\nmain()\n")


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("path", "imports_torch"), [("auto", False), ("engine", True)])
def test_the_launcher_imports_torch_only_on_the_engine_path(start_job, figures, path, imports_torch):
    # A cold backend cache is built once by importing dynamo (README, "Speed"); a dry run builds it first.
    assert start_job(["--dry-run", str(SCRIPTS / "allreduce_rank.py")]).finish().returncode == 0
    job = start_job(["--nproc-per-node", "2", str(SCRIPTS / "allreduce_rank.py")], {"ACCEL_LAUNCH_PATH": path},
                    command=WATCHED_LAUNCHER)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert [json.loads((job.record_dir / f"rank-{rank}.json").read_text())["sum"] for rank in (0, 1)] == [3.0, 3.0]
    assert (job.record_dir / "launcher-imported-torch").exists() == imports_torch
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(300)
def test_launches_at_once_each_listen_on_a_port_of_their_own_and_all_meet(start_job, figures):
    jobs = [start_job(["--nproc-per-node", "2", str(SCRIPTS / "allreduce_rank.py")]) for _ in range(4)]
    finished = [job.finish(timeout=250) for job in jobs]

    assert [f.returncode for f in finished] == [0] * 4, [f.stderr for f in finished]
    records = [[json.loads((job.record_dir / f"rank-{rank}.json").read_text()) for rank in (0, 1)] for job in jobs]
    assert all(record["sum"] == 3.0 for pair in records for record in pair)
    ports = [{record["env"]["MASTER_PORT"] for record in pair} for pair in records]
    assert all(len(pair) == 1 for pair in ports) and len(set.union(*ports)) == 4, ports
    figures(status=0, seconds=max(f.seconds for f in finished))


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("how", "status"), [("exit", 7), ("kill", 137)])
def test_a_rank_0_that_dies_early_ends_the_job_with_its_status(run_job, figures, how, status):
    finished, job = run_job(["--nproc-per-node", "3", script("early_rank0.py")], {"EARLY_HOW": how})

    assert finished.returncode == status, finished.stderr
    assert "accel-launch: rank 0 on " in finished.stderr, finished.stderr
    assert finished.seconds < 60, finished.seconds  # the others are stopped, not left to their store timeout
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)
