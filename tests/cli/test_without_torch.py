"""A Python without torch (a real one: a virtual environment holding every package of this one but torch) is told
so in one line, exit status 2, before anything starts, where it was the launcher's internal error."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TORCH_PARTS = ("torch", "functorch", "torchgen")


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment whose packages are this one's, torch's left out, and the project on its path."""
    folder = tmp_path_factory.mktemp("no-torch")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60)
    packages = Path(next(folder.glob("lib/python*/site-packages")))
    for source in map(Path, site.getsitepackages()):
        for entry in source.iterdir():
            name = entry.name.split("-")[0].split(".")[0]
            if name not in TORCH_PARTS and not entry.name.startswith("__editable__") and entry.suffix != ".pth" \
                    and not (packages / entry.name).exists():
                (packages / entry.name).symlink_to(entry)
    (packages / "accel_launch_tests.pth").write_text(f"{ROOT}\n")
    python = folder / "bin" / "python"
    found = subprocess.run([python, "-c", "import importlib.util, launcher; print(importlib.util.find_spec('torch'))"],
                           capture_output=True, text=True, timeout=60)
    assert found.stdout == "None\n", found.stderr  # torch really is absent there, and the launcher importable
    return python


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("args", "program"), [(["train.py"], "accel-launch"),
                                                (["--dry-run", "train.py"], "accel-launch"),
                                                (["report"], "accel-report")])
def test_a_python_without_torch_is_one_line_and_exit_2_naming_it(python_without_torch: Path, tmp_path: Path,
                                                                   args: list[str], program: str):
    ran = tmp_path / "ran"
    (tmp_path / "train.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    finished = subprocess.run([python_without_torch, "-m", "launcher", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=90)

    assert (finished.returncode, finished.stdout) == (2, ""), finished.stderr
    assert finished.stderr == (f"{program}: error: torch is not installed for {python_without_torch}: accel-launch "
                               "starts PyTorch jobs with the Python that runs it; install torch there (pip install "
                               "torch) or run accel-launch from the environment that has it\n")
    assert not ran.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["train.py"]
