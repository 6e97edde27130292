"""A rank's start: validation against the node's current facts without dynamo, the live check when dynamo
arrives, one registry walk per node, and never a stale fact (issue: time to the user's first line)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from accelerators.detect import detect_from_build
from accelerators.torch_build import torch_build
from launcher.rank import node_facts_cache as facts_cache
from tests.launches import clean_environ

pytestmark = pytest.mark.slow

# A user script that says what was imported before it started (torch, dynamo, importlib.metadata), then
# compiles and reports the backend.
PROBE = """
import json, os, sys
started = {name: name in sys.modules for name in ("torch", "torch._dynamo", "importlib.metadata")}
import torch
record = {"dynamo_before_user_code": started["torch._dynamo"], "dynamo_after_import_torch": "torch._dynamo" in sys.modules,
          "torch_before_user_code": started["torch"], "metadata_before_user_code": started["importlib.metadata"]}
if os.environ.get("PROBE_COMPILE"):
    torch.compile(torch.nn.Linear(2, 2))
    record["default_backend"] = str(torch.compiler.get_default_backend())
print(json.dumps(record), flush=True)
"""


# The rank program with the facts cache's lock waited for up to 120 s, not 10 s: where the ranks of a node share
# one walk of the registry, the sharing is the point, and on a loaded 2-core machine one walk took over 10 s.
PATIENT_BOOTSTRAP = ("import sys\nimport launcher.rank.node_facts_cache as facts_cache\n"
                     "facts_cache.LOCK_WAIT_SECONDS = 120.0\n"
                     "from launcher.rank.bootstrap import main\nmain(sys.argv[1:])\n")


def run_bootstrap(script: Path, cache_home: Path, backend: str, extra: dict[str, str] | None = None,
                  wait: bool = True, patient: bool = False) -> subprocess.CompletedProcess | subprocess.Popen:
    """The rank program alone, as the launcher starts it (without the engine's variables); `patient`: with
    PATIENT_BOOTSTRAP's wait for the lock."""
    env = clean_environ({"XDG_CACHE_HOME": str(cache_home), "ACCEL_COMPILE_BACKEND": backend,
                         "ACCEL_COMPILE_BACKEND_SOURCE": "--compile-backend", "ACCEL_ACCELERATOR": "cpu",
                         "RANK": "0", **(extra or {})})
    env.pop("TORCHELASTIC_ERROR_FILE", None)
    start = ["-c", PATIENT_BOOTSTRAP] if patient else ["-m", "launcher.rank.bootstrap"]
    argv = [sys.executable, "-P", *start, "script", str(script)]
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def plant_cache(cache_home: Path, names: list[str]) -> Path:
    """Write the node's cache file for cpu, under the key of what is installed now."""
    build = torch_build()
    key = facts_cache.cache_key("cpu", asdict(build) if build is not None else None)
    path = facts_cache.cache_file(facts_cache.cache_dir({"XDG_CACHE_HOME": str(cache_home)}), key)
    facts_cache.store_backends(path, key, tuple(names))
    return path


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    return script


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.timeout(120)
def test_with_current_facts_the_user_starts_before_dynamo_and_compiles_with_the_backend(probe, tmp_path) -> None:
    plant_cache(tmp_path, ["aot_eager", "eager", "inductor"])
    done = run_bootstrap(probe, tmp_path, "aot_eager", {"PROBE_COMPILE": "1"})
    assert done.returncode == 0, done.stderr
    record = last_json(done.stdout)
    # importlib.metadata was a third of a rank's start; the facts key reads entry_points.txt itself.
    assert record == {"dynamo_before_user_code": False, "dynamo_after_import_torch": False,
                      "torch_before_user_code": False, "metadata_before_user_code": False,
                      "default_backend": "aot_eager"}


@pytest.mark.timeout(120)
@pytest.mark.skipif(detect_from_build({}, torch_build()) is None,
                    reason="only the files of a CPU-only torch rule out every device")
def test_on_a_cpu_only_torch_the_rank_detects_the_accelerator_without_importing_torch(probe, tmp_path) -> None:
    plant_cache(tmp_path, ["eager", "inductor"])
    done = run_bootstrap(probe, tmp_path, "inductor", {"ACCEL_ACCELERATOR": ""})
    assert done.returncode == 0, done.stderr
    assert last_json(done.stdout)["torch_before_user_code"] is False


@pytest.mark.timeout(120)
def test_the_rank_trusts_the_node_cache_and_dynamo_checks_again_when_it_arrives(probe, tmp_path) -> None:
    # A cache that claims a backend dynamo does not have: the start passes on the facts, the live check stops it.
    plant_cache(tmp_path, ["eager", "no_such_backend"])
    started = run_bootstrap(probe, tmp_path, "no_such_backend")
    assert started.returncode == 0, started.stderr
    assert last_json(started.stdout)["dynamo_before_user_code"] is False
    compiled = run_bootstrap(probe, tmp_path, "no_such_backend", {"PROBE_COMPILE": "1"})
    assert compiled.returncode == 2
    lines = compiled.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in compiled.stderr
    assert "refused the compile backend" in lines[0] and "'no_such_backend' (from --compile-backend)" in lines[0]


@pytest.mark.timeout(120)
def test_the_rank_does_not_trust_a_node_cache_that_others_can_write(probe, tmp_path) -> None:
    # The same planted claim in a file of mode 0666: the start walks the registry itself and refuses.
    plant_cache(tmp_path, ["eager", "no_such_backend"]).chmod(0o666)
    started = run_bootstrap(probe, tmp_path, "no_such_backend")
    assert started.returncode == 2, started.stderr
    assert "refused the compile backend" in started.stderr and "Traceback" not in started.stderr


@pytest.mark.timeout(120)
def test_a_backend_missing_from_the_cache_is_looked_up_live_before_a_refusal(probe, tmp_path) -> None:
    plant_cache(tmp_path, ["eager"])
    done = run_bootstrap(probe, tmp_path, "aot_eager", {"PROBE_COMPILE": "1"})
    assert done.returncode == 0, done.stderr
    assert last_json(done.stdout)["default_backend"] == "aot_eager"


@pytest.mark.timeout(120)
def test_a_new_entry_point_makes_new_facts_never_the_stale_ones(probe, tmp_path) -> None:
    plant_cache(tmp_path, ["eager", "inductor"])
    site = tmp_path / "site"
    backend_module = site / "fresh_backend.py"
    site.mkdir()
    backend_module.write_text("def compiler(gm, example_inputs):\n    return gm.forward\n")
    dist_info = site / "fresh_backend-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fresh-backend\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[torch_dynamo_backends]\nfresh = fresh_backend:compiler\n")
    done = run_bootstrap(probe, tmp_path, "fresh", {"PYTHONPATH": str(site), "PROBE_COMPILE": "1"})
    assert done.returncode == 0, done.stderr
    assert last_json(done.stdout)["default_backend"] == "fresh"
    files = sorted(facts_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}).glob("backends-*.json"))
    assert len(files) == 2  # the planted file, untouched, and the one for the new key
    assert any("fresh" in json.loads(path.read_text())["supported_backends"] for path in files)


@pytest.mark.timeout(180)
def test_ranks_of_a_node_without_facts_walk_the_registry_once_between_them(probe, tmp_path) -> None:
    ranks = [run_bootstrap(probe, tmp_path, "eager", {"RANK": str(rank)}, wait=False, patient=True)
             for rank in range(3)]
    outputs = [rank.communicate(timeout=150) for rank in ranks]
    assert all(rank.returncode == 0 for rank in ranks), outputs
    walked = [last_json(stdout)["dynamo_before_user_code"] for stdout, _ in outputs]
    assert walked.count(True) == 1, walked
    assert len(list(facts_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}).glob("backends-*.json"))) == 1


@pytest.mark.timeout(120)
def test_a_cache_file_of_the_wrong_shape_is_rebuilt_not_trusted(probe, tmp_path) -> None:
    # Hostile nesting, read by a real rank; every other wrong shape (an empty list, another key, bad JSON) is
    # refused by the same reader: tests/rank/test_node_facts_cache.py.
    path = plant_cache(tmp_path, ["eager"])
    path.write_text("[" * 100_000 + "]" * 100_000)
    done = run_bootstrap(probe, tmp_path, "inductor")
    assert done.returncode == 0, done.stderr
    assert "inductor" in json.loads(path.read_text())["supported_backends"]
