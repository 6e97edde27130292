"""Real scripts, as users write them, behave under accel-launch as under `python script.py`: the same exit status
and the same `out:` lines (tests/scripts/corpus/). A plain compile uses the resolved backend, a backend named in the
code is honoured and noted once, and the HF Trainer compiles with the resolved backend unless told otherwise
(dynamo's counters say which compiled). A rank runs the same bootstrap on both launch paths: each test runs on the
direct path, and the engine path takes the cases below that once failed there, a refusal (its line comes through
each path's error file), and the HF Trainer (tests/conftest.py, `launch_path`)."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, Launch, Launcher, clean_environ
from tests.shared_results import computed_once, shared_folder

CORPUS = SCRIPTS / "corpus"
RESOLVED = "aot_eager"  # differs from torch's own default (inductor), so a plain compile shows which one ran
NOTE = "accel-launch: note: the code's torch.compile(backend="
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.config", "functorch")

CASES = [
    ("explicit_inductor.py",),
    ("explicit_names.py",),
    ("inductor_config_first.py",),
    ("decorators_and_options.py",),
    ("callable_backend.py",),
    ("list_backends.py",),
    ("forked_child.py",),
    ("dataloader_workers.py",),
    ("traceback_user.py",),
    *[("import_order.py", ",".join(order)) for order in itertools.permutations(COMPILER_MODULES)],
]
# On the engine path: the two lines that crashed every rank there before, and forked workers.
ENGINE_CASES = [("explicit_inductor.py",), ("inductor_config_first.py",), ("dataloader_workers.py",)]
PATH_CASES = [("direct", case) for case in CASES] + [("engine", case) for case in ENGINE_CASES]


UnderPython = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def under_python(tmp_path_factory: pytest.TempPathFactory) -> UnderPython:
    """`python script.py ARGS`, run once in the session for both paths and both workers (tests/shared_results.py)."""
    folder = shared_folder(tmp_path_factory)

    def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
        def plain() -> list[object]:
            done = subprocess.run([sys.executable, str(script), *args], cwd=CORPUS, env=clean_environ(),
                                  capture_output=True, text=True, timeout=240)
            return [done.returncode, done.stdout, done.stderr]

        status, stdout, stderr = computed_once(folder, ["python", str(script), *args], plain)
        return subprocess.CompletedProcess([str(script), *args], status, stdout, stderr)

    return run


def _reference(case: tuple[str, ...]) -> tuple[str, ...]:
    """The `python script.py` run a case is compared with: its own, except that every import order shares one
    (python's own outcome does not depend on the order; only a hook of ours could make it)."""
    return ("import_order.py", ",".join(COMPILER_MODULES)) if case[0] == "import_order.py" else case


def _ours(launch: Launcher, script: Path, *args: str, cwd: Path, backend: str = RESOLVED,
          nproc: int = 1) -> Launch:
    return launch(["--nproc-per-node", str(nproc), "--compile-backend", backend, str(script), *args], cwd=cwd,
                  timeout=240)


def _lines(output: str, prefix: str) -> list[str]:
    """The lines that start with `prefix`, with the rank prefix a launcher may put before them removed."""
    found = []
    for line in output.splitlines():
        text = line.split("]:", 1)[1] if line.startswith("[") and "]:" in line else line
        if text.startswith(prefix):
            found.append(text)
    return found


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("launch_path")
@pytest.mark.parametrize("launch_path, case", PATH_CASES, indirect=["launch_path"],
                         ids=[f"{path}-{'-'.join(case).replace('.py', '')}" for path, case in PATH_CASES])
def test_a_real_script_behaves_as_under_python(launch: Launcher, tmp_path: Path, case: tuple[str, ...],
                                               under_python: UnderPython) -> None:
    script, *args = case
    reference, *reference_args = _reference(case)
    expected = under_python(CORPUS / reference, *reference_args)
    got = _ours(launch, CORPUS / script, *args, cwd=tmp_path)
    assert got.returncode == expected.returncode, got.stderr[-3000:]
    assert _lines(got.stdout, "out:") == _lines(expected.stdout, "out:"), got.stderr[-3000:]
    assert _lines(got.stdout, "out:"), expected.stderr[-3000:]
    if script == "import_order.py":  # a plain compile: python's own default, and the resolved backend in every order
        assert _lines(expected.stdout, "compiled with:") == ["compiled with: inductor"]
        assert _lines(got.stdout, "compiled with:") == [f"compiled with: {RESOLVED}"], got.stderr[-3000:]
        assert NOTE not in got.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_backend_named_in_the_code_is_used_and_noted_once_by_rank_0(launch: Launcher, tmp_path: Path) -> None:
    got = _ours(launch, CORPUS / "explicit_names.py", cwd=tmp_path, nproc=2)
    assert got.returncode == 0, got.stderr[-3000:]
    notes = _lines(got.stderr, NOTE)
    assert notes == [f"{NOTE}'eager') is used, not the resolved backend {RESOLVED} (from --compile-backend)"]
    assert notes[0] in got.stderr.splitlines()  # at the start of its line, as `grep '^accel-launch: note'` finds it
    assert "out: (2, 3)" in got.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("launch_path")
def test_a_backend_named_in_the_code_that_cannot_run_here_is_refused_in_one_line(launch: Launcher,
                                                                                  tmp_path: Path) -> None:
    script = tmp_path / "tvm_please.py"
    script.write_text("import torch\nprint('out: compiling', flush=True)\n"
                      "torch.compile(lambda t: t + 1, backend='tvm')(torch.ones(1))\nprint('out: never')\n")
    got = _ours(launch, script, cwd=tmp_path)
    assert got.returncode == 2, got.stderr[-3000:]
    assert "compile backend 'tvm' (from torch.compile in the code) is not supported on cpu" in got.stderr
    assert "Traceback" not in got.stderr and "out: never" not in got.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_import_path_backend_beside_the_script_is_found_as_the_script_finds_it(launch: Launcher,
                                                                                  tmp_path: Path) -> None:
    folder = tmp_path / "project"
    shutil.copytree(CORPUS / "with_backend", folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    got = _ours(launch, folder / "train.py", cwd=elsewhere, backend="mybk:my_backend")
    assert got.returncode == 0, got.stderr[-3000:]
    assert _lines(got.stdout, "backend:") == ["backend: mybk compiled"]
    assert _lines(got.stdout, "out:") == ["out: [9.0, 9.0]"]
    assert "PYTHONPATH" not in os.environ or str(folder) not in os.environ["PYTHONPATH"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failing_script_s_traceback_starts_at_its_own_first_frame(launch: Launcher, tmp_path: Path,
                                                                    under_python: UnderPython) -> None:
    got = _ours(launch, CORPUS / "traceback_user.py", cwd=tmp_path)
    expected = under_python(CORPUS / "traceback_user.py")
    assert got.returncode != 0 and expected.returncode == 1
    frames = [line.strip() for line in _lines(got.stderr, "  File ")]
    assert frames == [line.strip() for line in expected.stderr.splitlines() if line.startswith("  File ")]
    assert "ValueError: the user's own error" in got.stderr
    assert "runpy" not in got.stderr and "bootstrap" not in got.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_forked_children_never_host_the_store_of_a_two_rank_job(launch: Launcher, tmp_path: Path) -> None:
    got = _ours(launch, CORPUS / "forked_child.py", cwd=tmp_path, nproc=2)
    assert got.returncode == 0, got.stderr[-3000:]
    assert _lines(got.stdout, "dist: world") == ["dist: world True"] * 2


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("launch_path")
@pytest.mark.parametrize("launch_path, set_in_code, compiled_with, noted",
                         [("direct", "unset", RESOLVED, False), ("engine", "eager", "eager", True)],
                         indirect=["launch_path"])
def test_the_hf_trainer_compiles_with_the_resolved_backend_unless_the_code_names_one(
        launch: Launcher, tmp_path: Path, set_in_code: str, compiled_with: str, noted: bool) -> None:
    got = _ours(launch, CORPUS / "hf_trainer.py", set_in_code, cwd=tmp_path)
    assert got.returncode == 0, got.stderr[-3000:]
    assert _lines(got.stdout, "compiled with:") == [f"compiled with: {compiled_with}"]
    assert bool(_lines(got.stderr, NOTE)) == noted


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_forked_child_ended_by_sigterm_ends_alone(launch: Launcher, tmp_path: Path) -> None:
    # The rank's own SIGTERM handler takes its whole process group along; a child gets the default back.
    got = launch([str(SCRIPTS / "child_sigterm.py")], cwd=tmp_path)
    assert got.returncode == 0, got.stderr[-3000:]
    assert _lines(got.stdout, "child ended") == ["child ended by signal 15"]
