"""The environment sent to every node: what DeepSpeed's launcher sends (the head's NCCL*, PYTHON*, ... variables and
.deepspeed_env), .accel_env, ACCEL_* variables, --export."""

from __future__ import annotations

import pytest

from launcher.errors import RemoteEnvError
from launcher.head.remote_env import parse_env_file_text, remote_env


@pytest.fixture
def dirs(tmp_path):
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


def test_accel_variables_and_exports_are_sent_in_order(dirs) -> None:
    cwd, home = dirs
    environ = {"ACCEL_COMPILE_BACKEND": "eager", "PATH": "/bin", "WANDB_MODE": "off", "ACCEL_ACCELERATOR": "cpu"}
    env = remote_env(environ, ["WANDB_MODE"], cwd, home)
    assert list(env.items()) == [("ACCEL_COMPILE_BACKEND", "eager"), ("ACCEL_ACCELERATOR", "cpu"),
                                 ("WANDB_MODE", "off")]


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


def test_the_heads_variables_deepspeed_sends_reach_the_nodes_and_no_others(dirs) -> None:
    environ = {"NCCL_SOCKET_IFNAME": "eth1", "PYTHONPATH": "/src", "UCX_TLS": "rc", "MV2_X": "1", "MLFLOW_URI": "u",
               "PATH": "/bin", "LD_LIBRARY_PATH": "/lib", "HOME": "/root", "SECRET": "s"}
    assert remote_env(environ, (), *dirs) == {name: environ[name] for name in
                                               ("NCCL_SOCKET_IFNAME", "PYTHONPATH", "UCX_TLS", "MV2_X", "MLFLOW_URI")}



def test_an_accelerator_class_s_own_prefixes_are_sent_too(dirs) -> None:
    # npu's in DeepSpeed (NPU_Accelerator.export_envs): ASCEND, HCCL, LD_LIBRARY, PATH; cpu has none.
    environ = {"ASCEND_HOME": "/a", "HCCL_IF_IP": "10.0.0.1", "LD_LIBRARY_PATH": "/lib", "PATH": "/bin", "HOME": "/r"}
    assert remote_env(environ, (), *dirs, accelerator="npu") == {name: environ[name] for name in
                                                                 ("ASCEND_HOME", "HCCL_IF_IP", "LD_LIBRARY_PATH", "PATH")}
    assert remote_env(environ, (), *dirs, accelerator="cpu") == {}


@pytest.mark.parametrize(("ours", "module", "theirs"), [
    ("cuda", "cuda_accelerator", "CUDA_Accelerator"), ("npu", "npu_accelerator", "NPU_Accelerator"),
    ("hpu", "hpu_accelerator", "HPU_Accelerator"), ("xpu", "xpu_accelerator", "XPU_Accelerator"),
    ("mps", "mps_accelerator", "MPS_Accelerator"), ("cpu", "cpu_accelerator", "CPU_Accelerator")])
def test_each_accelerators_prefixes_are_deepspeeds_own(ours: str, module: str, theirs: str) -> None:
    import importlib

    from accelerators import accelerator_class

    deepspeed_class = getattr(importlib.import_module(f"deepspeed.accelerator.{module}"), theirs)
    assert accelerator_class(ours).export_env_prefixes == tuple(deepspeed_class.export_envs(None))


def test_our_prefixes_and_exclusions_are_deepspeeds_own() -> None:
    from deepspeed.launcher.runner import EXCLUDE_ENVS, EXPORT_ENVS

    from launcher.head.remote_env import EXCLUDED_WHERE_SET, EXPORT_PREFIXES

    assert set(EXPORT_ENVS) | {"NCCL"} == set(EXPORT_PREFIXES)
    assert {key: tuple(names) for key, names in EXCLUDE_ENVS.items()} == EXCLUDED_WHERE_SET


def test_under_aisc_job_name_the_two_variables_deepspeed_leaves_out_stay_home(dirs) -> None:
    environ = {"AISC_JOB_NAME": "j", "NCCL_IB_HCA": "mlx5", "UCX_NET_DEVICES": "d", "NCCL_DEBUG": "INFO"}
    assert remote_env(environ, (), *dirs) == {"NCCL_DEBUG": "INFO"}


def test_deepspeed_env_is_read_from_home_then_the_working_directory_which_wins(dirs) -> None:
    cwd, home = dirs
    (home / ".deepspeed_env").write_text("NCCL_SOCKET_IFNAME=home\nONLY_HOME= kept, stripped \n")
    (cwd / ".deepspeed_env").write_text("NCCL_SOCKET_IFNAME=cwd\n\n# a comment\nEQ=a=b\n")
    env = remote_env({"NCCL_SOCKET_IFNAME": "head"}, (), cwd, home)
    assert env == {"NCCL_SOCKET_IFNAME": "cwd", "ONLY_HOME": "kept, stripped", "EQ": "a=b"}


def test_ds_env_file_names_the_file_read_in_its_place(dirs) -> None:
    cwd, home = dirs
    (cwd / ".deepspeed_env").write_text("A=default\n")
    (cwd / "cluster.env").write_text("A=named\n")
    assert remote_env({"DS_ENV_FILE": "cluster.env"}, (), cwd, home) == {"A": "named"}


def test_accel_env_and_exports_win_over_deepspeed_env(dirs) -> None:
    cwd, home = dirs
    (cwd / ".deepspeed_env").write_text("A=ds\nB=ds\nC=ds\n")
    (cwd / ".accel_env").write_text("B=accel\n")
    assert remote_env({"C": "exported"}, ["C"], cwd, home) == {"A": "ds", "B": "accel", "C": "exported"}


@pytest.mark.parametrize(("text", "where"), [("A=1\nno equals\n", ":2"), ("A B=1\n", ":1: 'A B'")])
def test_a_bad_deepspeed_env_line_is_one_error_naming_file_and_line(dirs, text: str, where: str) -> None:
    cwd, home = dirs
    (cwd / ".deepspeed_env").write_text(text)
    with pytest.raises(RemoteEnvError) as caught:
        remote_env({}, (), cwd, home)
    assert caught.value.where == f"{cwd / '.deepspeed_env'}{where}"


def test_the_launchers_internal_variables_are_never_sent_and_never_set_by_a_file_or_export(dirs) -> None:
    cwd, home = dirs
    environ = {"ACCEL_STORE_FD": "3", "ACCEL_LAUNCHER_PID": "1", "ACCEL_NODE_JOB": "{}", "ACCEL_ACCELERATOR": "cpu"}
    assert remote_env(environ, (), cwd, home) == {"ACCEL_ACCELERATOR": "cpu"}
    with pytest.raises(RemoteEnvError, match="^--export 'ACCEL_STORE_FD': the launcher's own internal variable"):
        remote_env(environ, ["ACCEL_STORE_FD"], cwd, home)
    (cwd / ".accel_env").write_text("ACCEL_NODE_JOB={}\n")
    with pytest.raises(RemoteEnvError, match="accel_env:1: 'ACCEL_NODE_JOB': the launcher's own internal variable"):
        remote_env({}, (), cwd, home)
