"""A user's own `launcher` or `accelerators` module never breaks a launch, and wins for the user's own imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.launches import Launcher

pytestmark = pytest.mark.slow

# The user's script imports its own modules and records what it got.
USER_SCRIPT = """
import json, os
import launcher, accelerators
with open(os.path.join(os.environ["RECORD_DIR"], "rank-0.json"), "w") as handle:
    json.dump({"mine": [getattr(launcher, "MINE", None), getattr(accelerators, "MINE", None)],
               "backend": os.environ["ACCEL_COMPILE_BACKEND"]}, handle)
"""


def make_user_module(folder: Path, name: str, shape: str) -> None:
    """`name.py`, or a package `name/`, that marks itself as the user's."""
    if shape == "module":
        (folder / f"{name}.py").write_text("MINE = 'user'\n")
    else:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text("MINE = 'user'\n")


# Both names shadowed in one launch, one as a module and one as a package: with both layouts and both places,
# every (name, shape, place) of a user's own module is shown.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["the script's folder", "the working directory, with -m"])
@pytest.mark.parametrize("shapes", [("module", "package"), ("package", "module")],
                         ids=["launcher.py, accelerators/", "launcher/, accelerators.py"])
def test_modules_named_like_ours_are_the_users_and_the_launch_works(
    launch: Launcher, tmp_path: Path, shapes: tuple[str, str], where: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name, shape in zip(("launcher", "accelerators"), shapes):
        make_user_module(project, name, shape)
    (project / "train.py").write_text(USER_SCRIPT)
    program = [str(project / "train.py")] if where == "the script's folder" else ["-m", "train"]
    result = launch(["--compile-backend", "eager", *program], cwd=project, console_script=True)
    assert result.returncode == 0, result.stderr
    assert result.records()[0] == {"mine": ["user", "user"], "backend": "eager"}


@pytest.mark.timeout(120)
def test_our_accelerators_are_still_the_users_api_when_nothing_shadows_them(launch: Launcher, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import json, os\n"
        "from accelerators import get_accelerator\n"
        "with open(os.path.join(os.environ['RECORD_DIR'], 'rank-0.json'), 'w') as handle:\n"
        "    json.dump({'backend': get_accelerator().get_compile_backend()}, handle)\n"
    )
    (tmp_path / "launcher.py").write_text("raise SystemExit('the user launcher module was run')\n")
    result = launch(["--compile-backend", "aot_eager", str(script)], cwd=tmp_path, console_script=True)
    assert result.returncode == 0, result.stderr
    assert result.records()[0] == {"backend": "aot_eager"}
