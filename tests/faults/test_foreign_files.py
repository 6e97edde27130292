"""Files other users can write are not used silently (issue 37): a `./.env`, `.deepspeed_env` or the file
`DS_ENV_FILE` names, owned by another user or writable by others, is refused in one line that says how to proceed,
exit 2, before anything starts; a file the user names with --env-file is used as it is."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user (nobody) needs root")

NOBODY = pwd.getpwnam("nobody").pw_uid
HOSTFILE = "hostA slots=1\nhostB slots=1\n"


def planted(folder: Path, name: str, owner: int, mode: int) -> Path:
    path = folder / name
    path.write_text("LD_PRELOAD=/tmp/planted.so\n", encoding="utf-8")
    os.chown(path, owner, -1)
    path.chmod(mode)
    return path


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("accel-launch: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("owner", "mode"), [(NOBODY, 0o666), (NOBODY, 0o644), (0, 0o666)],
                         ids=["another-users-writable-by-all", "another-users", "own-writable-by-all"])
def test_a_dot_env_another_user_could_write_is_refused_saying_how_to_proceed(launch, tmp_path, owner, mode):
    (tmp_path / "t.py").write_text("", encoding="utf-8")
    planted(tmp_path, ".env", owner, mode)
    done = launch(["--dry-run", "t.py"], cwd=tmp_path)

    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert ".env" in line and "--env-file" in line and "chmod o-w" in line
    assert "LD_PRELOAD" not in done.stdout


@pytest.mark.timeout(60)
def test_a_dot_env_the_user_names_with_env_file_is_used_as_it_is(launch, tmp_path):
    (tmp_path / "t.py").write_text("", encoding="utf-8")
    planted(tmp_path, "team.env", NOBODY, 0o644)
    done = launch(["--env-file", "team.env", "--dry-run", "t.py"], cwd=tmp_path)

    assert done.returncode == 0, done.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["cwd", "home-ds-env-file"])
def test_a_deepspeed_env_another_user_could_write_is_refused_saying_how_to_proceed(launch, tmp_path, where):
    (tmp_path / "t.py").write_text("", encoding="utf-8")
    (tmp_path / "hf").write_text(HOSTFILE, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    if where == "cwd":
        planted(tmp_path, ".deepspeed_env", NOBODY, 0o666)
    else:
        planted(home, "team_env", NOBODY, 0o644)
        env["DS_ENV_FILE"] = "team_env"
    done = launch(["--hostfile", "hf", "--dry-run", "t.py"], env=env, cwd=tmp_path)

    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert ("deepspeed_env" in line or "team_env" in line) and "chmod o-w" in line
