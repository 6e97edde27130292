"""--logs-specs NAME, torch's `torchrun.logs_specs` entry points: `default` is the launch without the flag, on
both paths; another layout, installed as a real package's entry point, runs on torch elastic's agent and puts
the rank's logs where torchrun puts them with the same layout; an unknown name is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, CliRunnerFn, Launcher, clean_environ

TORCHRUN = Path(sys.executable).with_name("torchrun")
PLUGIN = """\
import os

from torch.distributed.elastic.multiprocessing.api import LogsDest, LogsSpecs


class FlatLogsSpecs(LogsSpecs):
    \"\"\"Every rank's streams and error file side by side in the log folder: flat-RANK.out / .err / .json.\"\"\"

    def __init__(self, log_dir=None, redirects=None, tee=None, local_ranks_filter=None):
        super().__init__(log_dir, redirects or {}, tee or {}, local_ranks_filter)
        self._folder = log_dir

    @property
    def root_log_dir(self):
        return self._folder

    def reify(self, envs):
        os.makedirs(self._folder, exist_ok=True)
        paths = {rank: os.path.join(self._folder, f"flat-{rank}") for rank in envs}
        for rank, env in envs.items():
            env["TORCHELASTIC_ERROR_FILE"] = paths[rank] + ".json"
        return LogsDest({r: p + ".out" for r, p in paths.items()}, {r: p + ".err" for r, p in paths.items()},
                        {}, {}, {r: p + ".json" for r, p in paths.items()})
"""
SCRIPT = """\
import sys
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    print("to stdout", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if sys.argv[1:] == ["fail"]:
        raise RuntimeError("failed on purpose")

main()
"""


def _install_plugin(folder: Path) -> Path:
    """A real distribution on a path entry: its module and its metadata with the entry point."""
    folder.mkdir()
    (folder / "flat_logs.py").write_text(PLUGIN)
    info = folder / "flat_logs-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flat-logs\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchrun.logs_specs]\nflat = flat_logs:FlatLogsSpecs\n")
    return folder


def _with_plugin(folder: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


def test_an_unknown_layout_is_one_line_naming_the_installed_ones(cli: CliRunnerFn) -> None:
    result = cli(["--logs-specs", "flta", str(RECORD_RANK)])
    assert result.status == 2 and result.stdout == ""
    line, = result.stderr.splitlines()
    assert line == ("accel-launch: error: invalid value for --logs-specs: 'flta' (expected the name of one of "
                    "torch's torchrun.logs_specs entry points: default)")


def test_default_is_the_launch_without_the_flag(cli: CliRunnerFn) -> None:
    plans = [cli(["--dry-run", *flags, str(RECORD_RANK)]) for flags in ([], ["--logs-specs", "default"])]
    assert plans[0].status == plans[1].status == 0
    assert plans[0].row("launch path").startswith("direct")
    assert plans[0].stdout.replace(plans[0].row("rank env 0"), "") == plans[1].stdout.replace(
        plans[1].row("rank env 0"), "")


def test_another_layout_runs_on_the_engine_path(tmp_path: Path) -> None:
    plugin = _install_plugin(tmp_path / "plugin")
    done = subprocess.run([sys.executable, "-m", "launcher", "--dry-run", "--logs-specs", "flat", str(RECORD_RANK)],
                          env=clean_environ(_with_plugin(plugin)), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "engine: torch elastic's agent starts the ranks (--logs-specs flat" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.usefixtures("launch_path")
@pytest.mark.parametrize("launch_path", ["engine"], indirect=True)  # a layout of its own runs on the engine path
@pytest.mark.parametrize("fail", [False, True])
def test_a_plugin_layout_puts_the_logs_where_torchrun_puts_them(launch: Launcher, tmp_path: Path, fail: bool) -> None:
    plugin = _install_plugin(tmp_path / "plugin")
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    args = ["--logs-specs", "flat", "--redirects", "3", "--nproc-per-node", "1"]
    script_args = [str(script), *(["fail"] if fail else [])]
    theirs, ours = tmp_path / "torchrun-logs", tmp_path / "our-logs"
    subprocess.run([str(TORCHRUN), *args, "--log-dir", str(theirs), *script_args], capture_output=True, timeout=90,
                   env=clean_environ(_with_plugin(plugin)), cwd=tmp_path)
    result = launch([*args, "--log-dir", str(ours), *script_args], env=_with_plugin(plugin))
    assert result.returncode == (1 if fail else 0), result.stderr
    for folder in (theirs, ours):
        assert (folder / "flat-0.out").read_text() == "to stdout\n"
        assert "to stderr" in (folder / "flat-0.err").read_text()
    if fail:
        assert "RuntimeError: failed on purpose" in result.stderr  # the root cause, from the layout's error file
        assert "last lines of its stderr:" in result.stderr  # read from the layout's stderr file
