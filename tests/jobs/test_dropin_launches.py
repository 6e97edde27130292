"""torchrun's and DeepSpeed's flags in real launches: what the ranks get and what the terminal shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, Launcher, clean_environ
from tests.shared_results import computed_once, shared_folder

# Every test here runs on both launch paths (tests/conftest.py, `launch_path`) but where said.
pytestmark = pytest.mark.usefixtures("launch_path")

DUMP = str(SCRIPTS / "dump_env.py")
TORCHRUN = Path(sys.executable).with_name("torchrun")


def recorded(record_dir: Path) -> dict[int, dict]:
    return {int(path.stem.split("-")[1]): json.loads(path.read_text()) for path in record_dir.glob("rank-*.json")}


@pytest.mark.timeout(120)
def test_num_gpus_starts_that_many_ranks_and_each_stderr_line_is_prefixed_once_with_its_rank(launch: Launcher) -> None:
    # DeepSpeed's --num_gpus without a hostfile: N local ranks (on cpu, which has no devices to choose from).
    result = launch(["--num_gpus", "2", DUMP, "--say", "hi"])
    assert result.returncode == 0, result.stderr
    ranks = recorded(result.record_dir)
    assert set(ranks) == {0, 1} and ranks[0]["env"]["WORLD_SIZE"] == "2"
    for rank in (0, 1):
        assert f"[rank{rank}]:hi err {rank}" in result.stderr.splitlines()
        assert f"[rank{rank}]:hi torch" in result.stderr.splitlines()
    assert "[rank1]:[rank1]:" not in result.stderr and "[default" not in result.stderr
    assert sorted(result.stdout.splitlines()) == ["hi out 0", "hi out 1"]


@pytest.mark.timeout(120)
def test_a_one_rank_job_shows_its_stderr_without_a_prefix(launch: Launcher) -> None:
    result = launch([DUMP, "--say", "solo"])
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[1:] == ["solo err 0", "[rank0]:solo torch"]


@pytest.mark.timeout(120)
def test_a_prefix_template_of_torchruns_variable_is_used_as_given(launch: Launcher) -> None:
    result = launch([DUMP, "--say", "x"], env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "<${role_name}${rank}> "})
    assert "<default0> x err 0" in result.stderr.splitlines()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # its flags take it to the engine
def test_role_virtual_local_rank_and_rendezvous_settings_reach_the_ranks(launch: Launcher) -> None:
    result = launch(["--role", "trainer", "--virtual-local-rank", "--rdzv-conf", "join_timeout=77",
                     "--monitor-interval", "0.2", "--event-log-handler", "console", "--local-addr", "127.0.0.1",
                     "--nproc-per-node", "2", "--run-path", DUMP])
    assert result.returncode == 0, result.stderr
    ranks = recorded(result.record_dir)
    assert [ranks[rank]["env"]["ROLE_NAME"] for rank in (0, 1)] == ["trainer", "trainer"]
    assert [ranks[rank]["env"]["LOCAL_RANK"] for rank in (0, 1)] == ["0", "0"]
    assert ranks[1]["argv"] == [DUMP]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # its flags take it to the engine
def test_torch_elastics_watchdog_runs_and_gives_every_rank_its_timer_file(launch: Launcher) -> None:
    # the variable takes the job to torch elastic's agent, whose own watchdog our agent keeps (rank_agent.py)
    result = launch(["--nproc-per-node", "2", DUMP], env={"TORCHELASTIC_ENABLE_FILE_TIMER": "1"})
    assert result.returncode == 0, result.stderr
    timer_files = {recorded(result.record_dir)[rank]["env"].get("TORCHELASTIC_TIMER_FILE") for rank in (0, 1)}
    timer_file, = timer_files
    assert timer_file is not None and Path(timer_file).name.startswith("watchdog_timer_")


@pytest.mark.timeout(180)
def test_tee_and_local_ranks_filter_show_only_the_chosen_ranks_as_torchrun_shows_them(
        launch: Launcher, tmp_path_factory: pytest.TempPathFactory) -> None:
    flags = ["--nproc-per-node", "2", "--tee", "3", "--local-ranks-filter", "1", DUMP, "--say", "f"]
    result = launch(flags)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[default1]:f out 1"]
    assert "[default1]:f err 1" in result.stderr.splitlines() and "f err 0" not in result.stderr

    def torchrun() -> list[object]:  # once for both paths and both workers (tests/shared_results.py)
        folder = tmp_path_factory.mktemp("torchrun")
        done = subprocess.run([str(TORCHRUN), *flags], env=clean_environ({"RECORD_DIR": str(folder)}),
                              capture_output=True, text=True, timeout=90, cwd=folder)
        return [done.returncode, done.stdout, done.stderr]

    status, stdout, stderr = computed_once(shared_folder(tmp_path_factory), ["torchrun", *flags], torchrun)
    assert status == 0, stderr
    assert result.stdout.splitlines() == stdout.splitlines()
    said = [line for line in stderr.splitlines() if " err " in line]
    assert said == [line for line in result.stderr.splitlines() if " err " in line] == ["[default1]:f err 1"]


@pytest.mark.timeout(120)
def test_redirects_keep_output_in_the_log_dir_only(launch: Launcher, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    result = launch(["--nproc-per-node", "2", "--redirects", "3", "--log-dir", str(logs), DUMP, "--say", "r"])
    assert result.returncode == 0, result.stderr
    assert "r out" not in result.stdout and "r err" not in result.stderr
    assert sorted(path.read_text() for path in logs.glob("*/attempt_0/*/stdout.log")) == ["r out 0\n", "r out 1\n"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # its flags take it to the engine
def test_duplicate_filters_keep_torchruns_own_tee_and_headers_in_the_filtered_file(launch: Launcher,
                                                                                   tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    result = launch(["--nproc-per-node", "2", "--tee", "1", "--log-dir", str(logs),
                     "--duplicate-stdout-filters", "f out", DUMP, "--say", "f"])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[default0]:f out 0", "[default1]:f out 1"]
    filtered = next(logs.glob("*/attempt_0/filtered_stdout.log")).read_text()
    assert sorted(filtered.splitlines()) == ["[default0]:f out 0", "[default1]:f out 1"]  # was a NUL-marked header


@pytest.mark.timeout(120)
def test_enable_each_rank_log_writes_each_ranks_streams_to_files(launch: Launcher, tmp_path: Path) -> None:
    logs = tmp_path / "each"
    result = launch(["--nproc-per-node", "2", "--enable_each_rank_log", str(logs), DUMP, "--say", "e"])
    assert result.returncode == 0, result.stderr
    assert sorted(path.read_text() for path in logs.glob("*/attempt_0/*/stdout.log")) == ["e out 0\n", "e out 1\n"]


@pytest.mark.timeout(120)
def test_quiet_and_log_level_error_leave_out_the_launch_line_as_deepspeed_does(launch: Launcher) -> None:
    loud = launch([DUMP, "--say", "q"])
    assert loud.returncode == 0, loud.stderr
    assert any(line.startswith("accel-launch: 1 rank(s)") for line in loud.stderr.splitlines()), loud.stderr
    for flags in (["-q"], ["--log_level", "error"]):
        quiet = launch([*flags, DUMP, "--say", "q"])
        assert quiet.returncode == 0, quiet.stderr
        assert quiet.stderr.splitlines() == ["q err 0", "[rank0]:q torch"], flags  # the rank's own lines only
