"""The `accel-launch` click command, in-process: help, both spellings of a flag, the script's own arguments,
and usage errors as one line with exit 2 (docs/CONTRACT.md section 5)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, CliRunnerFn, clean_environ

REPO = Path(__file__).resolve().parents[2]


def test_help_is_a_summary_an_example_and_every_option_with_both_spellings(cli: CliRunnerFn) -> None:
    result = cli(["--help"])
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Usage: accel-launch [OPTIONS] SCRIPT [SCRIPT_ARGS]..."
    assert "Example:" in result.stdout and "accel-launch --nproc-per-node 2" in result.stdout
    for spelling in ("--compile-backend, --compile_backend", "--nproc-per-node, --nproc_per_node",
                     "--ds-config, --ds_config", "--dry-run, --dry_run"):
        assert spelling in result.stdout
    assert "ACCEL_COMPILE_BACKEND" in result.stdout


@pytest.mark.parametrize(("hyphen", "underscore"), [
    (["--nproc-per-node", "2"], ["--nproc_per_node", "2"]),
    (["--compile-backend", "eager"], ["--compile_backend", "eager"]),
    (["--master-port", "29222"], ["--master_port", "29222"]),
    (["--log-dir", "logs"], ["--log_dir", "logs"]),
])
def test_hyphen_and_underscore_spellings_give_the_same_plan(
    cli: CliRunnerFn, hyphen: list[str], underscore: list[str]
) -> None:
    plans = [cli(["--dry-run", *flags, str(RECORD_RANK)]) for flags in (hyphen, underscore)]
    assert [plan.status for plan in plans] == [0, 0], [plan.stderr for plan in plans]
    assert plans[0].stdout == plans[1].stdout
    assert plans[0].stdout != cli(["--dry-run", str(RECORD_RANK)]).stdout  # the flag changed the plan


def test_everything_after_the_script_goes_to_it_untouched_even_our_own_flags(cli: CliRunnerFn) -> None:
    script_args = ["--nproc-per-node", "4", "--compile-backend", "nope", "--", "-m", "a b"]
    result = cli(["--dry-run", str(RECORD_RANK), *script_args])
    assert result.status == 0, result.stderr
    assert result.row("ranks per node") == "1"
    assert result.row("compile backend") == "inductor (from accelerator default)"
    assert result.row("node 0 command").endswith(f"script {RECORD_RANK} --nproc-per-node 4 --compile-backend nope "
                                                 "-- -m 'a b'")


@pytest.mark.parametrize(("args", "expected"), [
    ([], "accel-launch: error: Missing argument 'SCRIPT'."),
    (["--nproc-per-node"], "accel-launch: error: Option '--nproc-per-node' requires an argument."),
    (["--bogus-flag", "x.py"], "accel-launch: error: No such option '--bogus-flag'."),
    (["--rdzv-backend", "zookeeper", "x.py"], "accel-launch: error: invalid value for --rdzv-backend: 'zookeeper'"),
    (["-m", "--no-python", "x"], "accel-launch: error: -m/--module and --no-python cannot be used together"),
    (["--nnodes", "2:1", "x.py"], "accel-launch: error: invalid value for --nnodes: '2:1'"),
    (["--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1", "x.py"], "accel-launch: error: invalid value "
     "for --node-rank"),
])
def test_a_usage_error_is_one_line_with_exit_2_and_nothing_on_stdout(
    cli: CliRunnerFn, tmp_path: Path, args: list[str], expected: str
) -> None:
    (tmp_path / "x.py").write_text("")
    result = cli(args)
    assert result.status == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(expected), lines[0]


def test_a_note_goes_to_stderr_and_the_plan_to_stdout(cli: CliRunnerFn) -> None:
    # DeepSpeed's device flags on cpu: no devices to choose from, so the launcher says what it does instead.
    result = cli(["--dry-run", "--num_gpus", "2", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.stderr.startswith("accel-launch: note: cpu has no devices to choose from")
    assert result.row("ranks per node") == "2"
    assert "note" not in result.stdout


def test_a_value_error_from_our_own_code_is_not_worded_as_a_usage_error(
    cli: CliRunnerFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only LaunchError is the user's; a ValueError of ours is a bug and goes on to the internal-error line.
    def a_bug(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug of ours")

    monkeypatch.setattr("launcher.cli.command.prepare_job", a_bug)
    with pytest.raises(ValueError, match="a bug of ours"):
        cli(["--dry-run", str(RECORD_RANK)])


def test_help_shows_each_numbers_range_and_never_an_unbounded_one(cli: CliRunnerFn) -> None:
    result = cli(["--help"])
    assert "ranks. [default: 0.1]" in " ".join(result.stdout.split())  # --monitor-interval: checked, not a range
    assert "None]" not in result.stdout


def test_the_readmes_dry_run_is_what_the_dry_run_prints(tmp_path: Path) -> None:
    """The README's example, word for word, but for what differs by machine: the venv's path, the job id and the
    thread counts (this machine's cores)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = "$ accel-launch --dry-run --nproc-per-node 2 examples/train.py --steps 20\n"
    shown = readme[readme.index(command) + len(command):]
    shown = shown[:shown.index("```")]
    done = subprocess.run([sys.executable, "-m", "launcher", *shlex.split(command[2:])[1:]], cwd=REPO,
                          env=clean_environ(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    def machine_free(text: str) -> str:
        text = text.replace(sys.executable, "/path/to/.venv/bin/python3")
        text = re.sub(r"TORCH_COMPILE_JOB_ID=accel-\w+", "TORCH_COMPILE_JOB_ID=accel-ID", text)
        return re.sub(r"(OMP_NUM_THREADS|TORCHINDUCTOR_COMPILE_THREADS)=\d+", r"\1=N", text)

    assert machine_free(done.stdout) == machine_free(shown)
