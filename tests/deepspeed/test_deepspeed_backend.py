"""DeepSpeed's engine compiles with the resolved backend at every level, and accepts the ds_config we read. Where
the name came from is resolved before any rank, and the bridge is the rank's own, the same on both paths: each test
runs on the direct path, and the engine path takes the two-rank flag level (tests/conftest.py, `launch_path`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, Launcher, clean_environ

DS_RANK = SCRIPTS / "ds_rank.py"
DS_CONFIG = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "SGD", "params": {"lr": 0.1}}}
# A DeepSpeed key of `compile` besides ours, to show it still reaches DeepSpeed as written.
COMPILE_KEYS = {"debug_log": True}


def write_config(folder: Path, compile_section: dict | None) -> Path:
    config = dict(DS_CONFIG)
    if compile_section is not None:
        config["compile"] = compile_section
    path = folder / "ds_config.json"
    path.write_text(json.dumps(config, indent=2))
    return path


LEVELS = {
    "flag": ("eager", "aot_eager", "aot_eager", "eager", "--compile-backend"),
    "env": (None, "eager", "aot_eager", "eager", "ACCEL_COMPILE_BACKEND"),
    "ds_config": (None, None, "eager", "eager", "ds_config"),
    "default": (None, None, None, "inductor", "accelerator default"),
}
LEVEL_CASES = {**{f"direct-{name}": ("direct", *level) for name, level in LEVELS.items()},
               "engine-flag": ("engine", *LEVELS["flag"])}


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("launch_path")
@pytest.mark.parametrize(("launch_path", "flag", "env", "file_backend", "expected", "source"),
                         list(LEVEL_CASES.values()), ids=list(LEVEL_CASES), indirect=["launch_path"])
def test_engine_compile_hands_torch_compile_the_backend_of_each_level(
    launch: Launcher, tmp_path: Path, flag, env, file_backend, expected: str, source: str
) -> None:
    section = {**COMPILE_KEYS, "backend": file_backend} if file_backend else dict(COMPILE_KEYS)
    config = write_config(tmp_path, section)
    written = config.read_bytes()
    # Every rank: two ranks for the flag; the other levels differ only in where the name came from, one rank.
    nproc = 2 if flag else 1
    args = ["--nproc-per-node", str(nproc), *(["--compile-backend", flag] if flag else [])]
    step = [] if file_backend == expected else ["--no-step"]  # train where it is cheap; inductor builds C++
    result = launch([*args, str(DS_RANK), "--deepspeed", "--deepspeed_config", str(config), *step],
                    env={"ACCEL_COMPILE_BACKEND": env} if env else {}, timeout=280)
    assert result.returncode == 0, result.stderr
    assert f"compile backend {expected} (from {source}" in result.stderr
    records = result.records()
    assert set(records) == set(range(nproc))
    for record in records.values():
        assert record["handed_to_torch_compile"] == [expected]
        assert record["deepspeed_accelerator"] == expected
        assert record["compile_config"]["debug_log"] is True
        assert record["deepspeed_imported_by_bootstrap"] is False
        if not step:
            assert len(record["losses"]) == 2
    assert config.read_bytes() == written


@pytest.mark.timeout(300)
def test_an_import_path_backend_reaches_deepspeeds_engine(launch: Launcher, tmp_path: Path) -> None:
    (tmp_path / "my_backends.py").write_text("def passthrough(gm, example_inputs):\n    return gm.forward\n")
    config = write_config(tmp_path, None)
    result = launch(["--compile-backend", "my_backends:passthrough", str(DS_RANK),
                     "--deepspeed_config", str(config)], env={"PYTHONPATH": str(tmp_path)}, timeout=280)
    assert result.returncode == 0, result.stderr
    assert set(result.records()) == {0}
    for record in result.records().values():
        assert record["handed_to_torch_compile"] == ["my_backends:passthrough"]
        assert len(record["losses"]) == 2


@pytest.mark.timeout(300)
def test_a_refusal_by_deepspeeds_accelerator_is_reported_once_with_exit_2(launch: Launcher, tmp_path: Path) -> None:
    # The one seam: DeepSpeed's CPU accelerator made to refuse, as it would a backend it does not know.
    seam = tmp_path / "seam"
    seam.mkdir()
    (seam / "sitecustomize.py").write_text(
        "from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator\n"
        "def refuse(self, backend):\n"
        "    raise ValueError(f'{backend} not supported by cpu. Supported Backends are [\\'inductor\\']')\n"
        "CPU_Accelerator.set_compile_backend = refuse\n"
    )
    config = write_config(tmp_path, None)
    result = launch(["--nproc-per-node", "2", "--compile-backend", "eager", str(DS_RANK), "--deepspeed_config",
                     str(config)], env={"PYTHONPATH": str(seam)}, timeout=280)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "refused" in line]
    assert len(lines) == 1, result.stderr
    assert "DeepSpeed's accelerator: eager not supported by cpu" in lines[0]
    assert lines[0].startswith("accel-launch: rank ") and " on " in lines[0]
    assert "Traceback" not in result.stderr and not result.records()


@pytest.mark.timeout(120)
def test_plain_deepspeed_refuses_compile_backend_and_a_rank_of_ours_accepts_it(tmp_path: Path) -> None:
    build = "from deepspeed.runtime.config import DeepSpeedConfig\nDeepSpeedConfig({path!r})\nprint('accepted')\n"
    config = write_config(tmp_path, {"backend": "eager", "deepcompile": False})
    script = tmp_path / "build_config.py"
    script.write_text(build.format(path=str(config)))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=100)
    assert plain.returncode != 0 and "Extra inputs are not permitted" in plain.stderr
    env = clean_environ({"ACCEL_COMPILE_BACKEND": "eager", "ACCEL_ACCELERATOR": "cpu", "RANK": "0"})
    ours = subprocess.run([sys.executable, "-P", "-m", "launcher.rank.bootstrap", "script", str(script)],
                          env=env, capture_output=True, text=True, timeout=100)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip().endswith("accepted")
