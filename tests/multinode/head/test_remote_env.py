"""The environment sent to every node: .accel_env, ACCEL_* variables, --export."""

from __future__ import annotations

import pytest

from launcher.multinode.errors import RemoteEnvError
from launcher.multinode.head.remote_env import parse_env_file_text, remote_env


@pytest.fixture
def dirs(tmp_path):
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


def test_accel_variables_and_exports_are_sent_in_order(dirs) -> None:
    cwd, home = dirs
    environ = {"ACCEL_COMPILE_BACKEND": "eager", "PATH": "/bin", "NCCL_DEBUG": "INFO", "ACCEL_ACCELERATOR": "cpu"}
    env = remote_env(environ, ["NCCL_DEBUG"], cwd, home)
    assert list(env.items()) == [("ACCEL_COMPILE_BACKEND", "eager"), ("ACCEL_ACCELERATOR", "cpu"), ("NCCL_DEBUG", "INFO")]


def test_the_working_directory_file_wins_over_the_home_file(dirs) -> None:
    cwd, home = dirs
    (cwd / ".accel_env").write_text("A=from cwd\n")
    (home / ".accel_env").write_text("B=from home\n")
    assert remote_env({}, (), cwd, home) == {"A": "from cwd"}


def test_the_home_file_is_read_when_the_working_directory_has_none(dirs) -> None:
    cwd, home = dirs
    (home / ".accel_env").write_text("# comment\n\nB=x=y 'z'\n")
    assert remote_env({}, (), cwd, home) == {"B": "x=y 'z'"}


def test_the_environment_and_exports_win_over_the_file(dirs) -> None:
    cwd, home = dirs
    (cwd / ".accel_env").write_text("ACCEL_X=file\nFOO=file\nKEEP=file\n")
    env = remote_env({"ACCEL_X": "env", "FOO": "env"}, ["FOO"], cwd, home)
    assert env == {"ACCEL_X": "env", "FOO": "env", "KEEP": "file"}


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("A=1\nno equals sign\n", "f:2", "expected NAME=value"),
        ("1A=x\n", "f:1: '1A'", "not a variable name"),
        ("A-B=x\n", "f:1: 'A-B'", "not a variable name"),
        ("=x\n", "f:1: ''", "not a variable name"),
    ],
)
def test_a_malformed_env_file_line_names_file_and_line(text: str, where: str, words: str) -> None:
    with pytest.raises(RemoteEnvError) as caught:
        parse_env_file_text(text, "f")
    assert caught.value.where == where and words in str(caught.value)


@pytest.mark.parametrize("name", ["1X", "A-B", "", "A B", "É"])
def test_an_export_that_is_not_a_variable_name_is_an_error(dirs, name: str) -> None:
    with pytest.raises(RemoteEnvError, match="not a variable name"):
        remote_env({name: "v"}, [name], *dirs)


def test_an_export_that_is_not_set_is_an_error(dirs) -> None:
    with pytest.raises(RemoteEnvError, match="--export MISSING: is not set"):
        remote_env({}, ["MISSING"], *dirs)


def test_an_accel_variable_with_a_bad_name_is_an_error(dirs) -> None:
    with pytest.raises(RemoteEnvError, match="'ACCEL_A-B'"):
        remote_env({"ACCEL_A-B": "1"}, (), *dirs)


def test_the_launchers_internal_variables_are_never_sent_and_never_set_by_a_file_or_export(dirs) -> None:
    cwd, home = dirs
    environ = {"ACCEL_STORE_FD": "3", "ACCEL_LAUNCHER_PID": "1", "ACCEL_NODE_JOB": "{}", "ACCEL_ACCELERATOR": "cpu"}
    assert remote_env(environ, (), cwd, home) == {"ACCEL_ACCELERATOR": "cpu"}
    with pytest.raises(RemoteEnvError, match="^--export 'ACCEL_STORE_FD': the launcher's own internal variable"):
        remote_env(environ, ["ACCEL_STORE_FD"], cwd, home)
    (cwd / ".accel_env").write_text("ACCEL_NODE_JOB={}\n")
    with pytest.raises(RemoteEnvError, match="accel_env:1: 'ACCEL_NODE_JOB': the launcher's own internal variable"):
        remote_env({}, (), cwd, home)
