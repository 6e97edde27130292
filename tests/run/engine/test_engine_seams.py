"""Torch's private names the engine path reaches are one table (launcher/run/engine/engine_seams.py): every one is in
the torch this suite runs on, the engine's modules reach no other, and a torch without any one of them turns its
feature off with one note (a --logs-specs plugin: one line, exit 2), the job running on as under torchrun, never a
traceback (docs/ARCHITECTURE.md, "Rules the code keeps"); under torch's own agent a stop signal has the outcome it
has on every path (128+N, one line, no rank left)."""

from __future__ import annotations

import ast
import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from launcher.contract.engine_options import EngineOptions
from launcher.run.engine import engine_seams
from launcher.run.engine.engine_seams import ABSENT, LOGS_SPECS, SEAMS, found
from tests.contract.test_engine_options import ARGV, job, placed
from tests.launches import clean_environ

SCRIPTS = Path(__file__).parent / "scripts"
TAKEN_AWAY = SCRIPTS / "seam_taken_away.py"
FAIL_ONCE = SCRIPTS / "fail_once_then_allreduce.py"
ENGINE = Path(engine_seams.__file__).parent


def _torch_agent() -> object:
    """torch's own local agent, as made for a job's plan: what its `__init__` makes."""
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs

    from launcher.run.engine.agent_launch import rendezvous_parameters, worker_spec

    plan = placed(job(EngineOptions()))
    return LocalElasticAgent(worker_spec(plan, ARGV, rendezvous_parameters(plan), None), DefaultLogsSpecs())


@pytest.mark.parametrize("name", sorted(SEAMS))
def test_every_seam_is_in_this_torch(name: str) -> None:
    assert found(name, _torch_agent(), quiet=True) is not ABSENT


def test_the_engine_reaches_no_private_torch_name_outside_the_table() -> None:
    from torch.distributed.elastic.rendezvous import RendezvousHandler

    torch_bases = {"LocalElasticAgent": _torch_agent(), "RendezvousHandler": RendezvousHandler}
    in_table = {seam.attribute.rsplit(".", 1)[-1] for seam in SEAMS.values()}
    reached: set[str] = set()
    for path in sorted(ENGINE.rglob("*.py")):
        if path.name == "engine_seams.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
                assert not [alias.name for alias in node.names if alias.name.startswith("_")], (path, node.module)
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                assert ast.unparse(node.value) in ("self", "super()"), (path, node.attr)  # ours, or torch's base's
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            bases = [torch_bases[base.id] for base in cls.bases
                     if isinstance(base, ast.Name) and base.id in torch_bases]
            names = {node.attr if isinstance(node, ast.Attribute) else node.name for node in ast.walk(cls)
                     if isinstance(node, ast.Attribute) and _private(node.attr)
                     or isinstance(node, ast.FunctionDef) and _private(node.name)}
            reached |= {name for name in names for base in bases if hasattr(base, name) or name in vars(base)}
    assert "_start_workers" in reached and reached <= in_table, reached - in_table


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _launch(seam: str, args: list[str], records: Path, extra: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    environ = clean_environ({"RECORD_DIR": str(records), **(extra or {})})
    return subprocess.run([sys.executable, str(TAKEN_AWAY), seam, *args], env=environ, capture_output=True,
                          text=True, timeout=100, cwd=records)


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("accel-launch: note: ")]


# One seam of each feature for the real launches: a feature is turned off by whichever of its seams is missing
# (`lacking`), which the next test shows for every seam in turn.
ONE_OF_EACH_FEATURE = sorted({seam.feature: name for name, seam in sorted(SEAMS.items(), reverse=True)}.values())


@pytest.mark.parametrize("name", sorted(SEAMS))
def test_each_seam_taken_away_turns_its_feature_off(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seam = SEAMS[name]
    agent = _torch_agent()
    assert engine_seams.lacking(seam.feature, agent) is None
    monkeypatch.setitem(SEAMS, name, dataclasses.replace(seam, attribute=seam.attribute + "_renamed"))
    monkeypatch.setattr(engine_seams, "_said", {seam.feature})  # said already: this test says nothing
    assert found(name, agent) is ABSENT and engine_seams.lacking(seam.feature, agent) == name


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ONE_OF_EACH_FEATURE)
def test_a_torch_without_the_seam_runs_the_job_with_one_note(name: str, tmp_path: Path) -> None:
    seam = SEAMS[name]
    done = _launch(name, ["--nproc-per-node", "2", "--max-restarts", "1", str(FAIL_ONCE)], tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    note = (f"accel-launch: note: torch {torch.__version__} has no {seam.module}.{seam.attribute}_renamed: "
            f"{seam.feature} is off; the job runs as under torchrun")
    assert _notes(done.stderr) == ([] if seam.feature == LOGS_SPECS else [note]), done.stderr  # the default layout
    records = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert records == [{"sum": 3.0, "attempt": 1}] * 2  # restarted once by torch's agent, then all_reduce over gloo


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_torch_without_the_plugin_loader_refuses_a_logs_specs_plugin_in_one_line(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin" / "flat_logs-1.0.dist-info"  # an entry point alone: torch's layout under a name
    plugin.mkdir(parents=True)
    (plugin / "METADATA").write_text("Metadata-Version: 2.1\nName: flat-logs\nVersion: 1.0\n")
    (plugin / "entry_points.txt").write_text(
        "[torchrun.logs_specs]\nflat = torch.distributed.elastic.multiprocessing:DefaultLogsSpecs\n")
    done = _launch("logs_specs_loader", ["--logs-specs", "flat", str(FAIL_ONCE)], tmp_path,
                   {"PYTHONPATH": str(plugin.parent)})

    seam = SEAMS["logs_specs_loader"]
    assert (done.returncode, done.stdout, list(tmp_path.glob("rank-*"))) == (2, "", []), done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"accel-launch: error: --logs-specs 'flat': torch {torch.__version__} has no {seam.module}.{seam.attribute}"
        "_renamed, torchrun's loader of the plugin; leave the flag out (torch's own layout of the logs)")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_under_torchs_own_agent_a_failed_job_ends_with_its_ranks_status_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(3)\n")
    done = _launch("start_workers", ["--nproc-per-node", "2", "--max-restarts", "1", str(script)], tmp_path)

    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert len(_notes(done.stderr)) == 1 and "failed first, with exit code 3" in done.stderr.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_under_torchs_own_agent_a_stop_signal_stops_every_rank_with_its_one_line(tmp_path: Path, sig: int) -> None:
    script = tmp_path / "wait.py"
    script.write_text("import os, time\nopen(os.path.join(os.environ['RECORD_DIR'], f\"started-{os.environ['RANK']}\"),"
                      " 'w').close()\ntime.sleep(100)\n")
    environ = clean_environ({"RECORD_DIR": str(tmp_path)})
    launcher = subprocess.Popen([sys.executable, str(TAKEN_AWAY), "start_workers", "--nproc-per-node", "2",
                                 "--max-restarts", "1", str(script)], env=environ, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 90
    while len(list(tmp_path.glob("started-*"))) < 2:
        assert time.monotonic() < deadline and launcher.poll() is None, launcher.communicate()
        time.sleep(0.05)
    ranks = [child for child in psutil.Process(launcher.pid).children(recursive=True) if str(script) in child.cmdline()]
    launcher.send_signal(sig)
    _, stderr = launcher.communicate(timeout=60)

    assert launcher.returncode == 128 + sig, stderr
    assert "Traceback" not in stderr, stderr
    assert stderr.splitlines()[-1] == f"accel-launch: stopped by {signal.Signals(sig).name}; every rank was stopped"
    assert len(ranks) == 2 and not [rank for rank in ranks if rank.is_running() and rank.status() != "zombie"]
