"""An unsupported backend from any level ends the launch before any rank starts: exit 2, one line naming the
backend, its source, the device and what is supported, with a did-you-mean. Shown in-process through the CLI;
tests/faults/test_bad_input.py shows the same refusals from real `python -m launcher` runs (no traceback, no
rank, nothing left), and its import-path case a refusal that only the ranks can make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelerators import UnsupportedBackendError
from accelerators.cpu import CPUAccelerator
from tests.launches import RECORD_RANK, CliRunnerFn


@pytest.mark.parametrize("level", ["flag", "env", "dotenv", "ds"])
def test_an_unsupported_backend_from_any_level_is_refused_in_one_line_naming_its_source(
    cli: CliRunnerFn, tmp_path: Path, level: str
) -> None:
    args: list[str] = []
    environ: dict[str, str] = {}
    ds_path = tmp_path / "ds.json"
    if level == "flag":
        args = ["--compile-backend", "indcutor"]
    elif level == "env":
        environ["ACCEL_COMPILE_BACKEND"] = "indcutor"
    elif level == "dotenv":
        (tmp_path / ".env").write_text("ACCEL_COMPILE_BACKEND=indcutor\n")
    else:
        ds_path.write_text(json.dumps({"compile": {"backend": "indcutor"}}))
        args = ["--ds-config", str(ds_path)]
    source = {"flag": "--compile-backend", "env": "ACCEL_COMPILE_BACKEND",
              "dotenv": f"ACCEL_COMPILE_BACKEND in {tmp_path / '.env'}", "ds": f"ds_config {ds_path}"}[level]
    result = cli([*args, "--nproc-per-node", "2", str(RECORD_RANK)], env=environ)
    assert result.status == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    message = lines[0]
    assert message.startswith("accel-launch: error: ")
    assert f"'indcutor' (from {source})" in message
    assert "not supported on cpu" in message
    assert "supported: " in message and "inductor" in message.split("supported: ")[1]
    assert "did you mean 'inductor'?" in message


def test_an_unsupported_backend_is_refused_by_a_dry_run_too(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--compile-backend", "indcutor", str(RECORD_RANK)])
    assert result.status == 2
    assert "accel-launch plan" not in result.stdout
    assert "'indcutor' (from --compile-backend)" in result.stderr


def test_a_cuda_only_backend_is_refused_on_cpu_naming_the_device(cli: CliRunnerFn) -> None:
    result = cli(["--compile-backend", "cudagraphs", str(RECORD_RANK)])
    assert result.status == 2
    assert "'cudagraphs' (from --compile-backend) is not supported on cpu" in result.stderr


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_compile_backend_flag_is_a_usage_error(cli: CliRunnerFn, value: str) -> None:
    result = cli(["--compile-backend", value, str(RECORD_RANK)])
    assert result.status == 2
    assert result.stderr.splitlines() == [
        f"accel-launch: error: invalid value for --compile-backend: {value!r} (give a backend name, or leave the flag out)"
    ], result.stderr


@pytest.mark.parametrize("path", ["my_backends:", "my_backends:fast.", ":fast", "my..backends:fast"])
def test_a_malformed_import_path_is_refused_with_the_reason_every_rank_would_give(cli: CliRunnerFn, path: str) -> None:
    with pytest.raises(UnsupportedBackendError) as in_a_rank:
        CPUAccelerator().set_compile_backend(path)
    result = cli(["--compile-backend", path, str(RECORD_RANK)])
    assert result.status == 2
    assert f"{path!r} (from --compile-backend) is not supported on cpu: {in_a_rank.value.reason};" in result.stderr


@pytest.mark.parametrize("path", ["node_check_backends.Backends.eager", "node_check_backends:Backends.eager"])
def test_a_backend_that_is_an_attribute_of_a_class_is_accepted_as_every_rank_accepts_it(
    cli: CliRunnerFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    (tmp_path / "node_check_backends.py").write_text(
        "class Backends:\n    @staticmethod\n    def eager(gm, example_inputs):\n        return gm.forward\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    CPUAccelerator().set_compile_backend(path)  # a rank accepts it
    result = cli(["--dry-run", "--compile-backend", path, str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{path} (from --compile-backend)"


def test_a_dotted_backend_whose_every_prefix_is_missing_is_refused_naming_the_longest(cli: CliRunnerFn) -> None:
    result = cli(["--compile-backend", "no_such_pkg_xyz.mod.fn", str(RECORD_RANK)])
    assert result.status == 2
    assert ("is not supported on cpu: module 'no_such_pkg_xyz.mod' cannot be found (ModuleNotFoundError: "
            "No module named 'no_such_pkg_xyz');") in result.stderr
