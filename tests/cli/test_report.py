"""`accel-report` in-process (click's CliRunner): its usage errors are one line, and a launch it shows as
refused ends in that launch's own error line and exit status 2, after the table. `accel-launch report` is the
same command, unless a file called report is in the working directory: then that is the script to launch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from launcher.cli.report import report_command
from tests.launches import CliRunnerFn, Launcher


def _report(args: Sequence[str], monkeypatch: pytest.MonkeyPatch, cwd: Path) -> Result:
    monkeypatch.chdir(cwd)
    unset: dict[str, str | None] = {key: None for key in os.environ if key.startswith("ACCEL_")}
    return CliRunner().invoke(report_command, list(args), env=unset, prog_name="accel-report")


@pytest.mark.parametrize(("args", "fragment"), [
    (["--nope"], "No such option '--nope'"),
    (["--compile-backend"], "Option '--compile-backend' requires an argument"),
    (["--env-file", "missing.env"], "env file missing.env: no such file"),
    (["--ds-config", "a\nb.json"], "ds_config a\\nb.json (from --ds-config): no such file"),
])
def test_a_bad_report_argument_is_one_line_and_exit_2(args: list[str], fragment: str, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    result = _report(args, monkeypatch, tmp_path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [result.stderr.rstrip("\n")]
    assert result.stderr.startswith("accel-report: error: ") and fragment in result.stderr


def test_a_backend_a_launch_would_refuse_is_shown_refused_with_the_launchs_reason_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _report(["--compile-backend", "inductr"], monkeypatch, tmp_path)
    assert result.exit_code == 2
    assert "a launch here would use    : nothing: inductr (from --compile-backend) would be refused" in result.stdout
    assert result.stderr.splitlines() == [result.stderr.rstrip("\n")]
    assert result.stderr.startswith("accel-report: error: a launch here would be refused: compile backend 'inductr'")
    assert "did you mean 'inductor'?" in result.stderr


def test_a_backend_a_launch_would_use_is_shown_with_exit_0(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = _report(["--compile-backend", "eager"], monkeypatch, tmp_path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert "a launch here would use    : eager (from --compile-backend)" in result.stdout


def test_a_removed_working_directory_is_one_line_for_the_report_too(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    result = CliRunner().invoke(report_command, [], prog_name="accel-report")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("accel-report: error: the working directory cannot be used")


def test_accel_launch_report_is_the_report_under_its_own_name(cli: CliRunnerFn, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    through_launch = cli(["report", "--compile-backend", "eager"])
    alone = _report(["--compile-backend", "eager"], monkeypatch, tmp_path)
    assert (through_launch.status, through_launch.stderr) == (0, "")
    assert through_launch.stdout == alone.stdout
    assert through_launch.stdout.startswith("accel-launch report\n")


def test_accel_launch_report_words_its_usage_errors_as_accel_report(cli: CliRunnerFn) -> None:
    result = cli(["report", "--nope"])
    assert (result.status, result.stdout, result.stderr) == (2, "", "accel-report: error: No such option '--nope'.\n")


def test_a_report_in_the_working_directory_is_the_script_to_launch_not_the_subcommand(cli: CliRunnerFn,
                                                                                     tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()  # a folder: the launch refuses it before any rank starts
    result = cli(["report"])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr.startswith("accel-launch: error: script 'report': is a directory")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_script_called_report_in_the_working_directory_is_launched_with_its_arguments(launch: Launcher,
                                                                                         tmp_path: Path) -> None:
    (tmp_path / "report").write_text("import json, os, sys\n"
                                     "path = os.path.join(os.environ['RECORD_DIR'], 'rank-0.json')\n"
                                     "open(path, 'w').write(json.dumps({'argv': sys.argv}))\n")
    result = launch(["report", "--compile-backend", "eager"])
    assert result.returncode == 0, result.stderr
    assert "accel-launch report" not in result.stdout
    assert result.records()[0]["argv"][1:] == ["--compile-backend", "eager"]
