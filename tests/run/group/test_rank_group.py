"""One node's ranks as one group (launcher/run/group/rank_group.py), with real processes: the group both paths run."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from launcher.contract.engine_options import EngineOptions
from launcher.contract.job_config import JobConfig, RunSettings
from launcher.contract.program import Program
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.run.group.rank_group import RankGroup
from launcher.node.node_plan import plan_node
from launcher.run.group.rank_logs import RankLogs, default_layout

BACKEND = ResolvedBackend("eager", "--compile-backend", "eager")


def group_of(tmp_path: Path, **engine: object) -> RankGroup:
    config = JobConfig(program=Program("script", "train.py"), backend=BACKEND, nproc_per_node=2,
                       settings=RunSettings(engine=EngineOptions(**engine)), rdzv_id="run")
    plan = plan_node(config, "cpu", 0, {})
    return RankGroup(RankLogs(plan, default_layout(plan, tmp_path)))


def start(group: RankGroup, code: dict[int, str]) -> None:
    for local_rank, source in code.items():
        group.start(local_rank, [sys.executable, "-c", source], {"RANK": str(local_rank), "PATH": "/usr/bin:/bin"})


@pytest.mark.timeout(60)
def test_the_first_rank_to_exit_is_the_failure_and_the_others_are_stopped_within_the_window(tmp_path, capfd) -> None:
    group = group_of(tmp_path)
    start(group, {0: "import time; time.sleep(60)",
                  1: "import sys; print('bad batch', file=sys.stderr); sys.exit(3)"})
    assert group.wait(30) == "failed"
    group.stop(signal.SIGTERM, 5)
    group.close(2)
    outcome = group.failure_outcome()
    assert outcome.status == 3 and outcome.failure.rank == 1
    assert outcome.failure.output_tail == ("bad batch",)
    assert {rank: failure.exitcode for rank, failure in group.failures().items()} == {0: -signal.SIGTERM, 1: 3}
    assert "[rank1]:bad batch" in capfd.readouterr().err


@pytest.mark.timeout(60)
def test_a_group_whose_ranks_all_exit_0_succeeded_and_has_no_failure(tmp_path) -> None:
    group = group_of(tmp_path)
    start(group, {0: "pass", 1: "import time; time.sleep(0.3)"})
    states = [group.wait(30), group.wait(30)]
    group.close(2)
    assert "succeeded" in states and "failed" not in states and group.failures() == {}


@pytest.mark.timeout(60)
def test_a_failed_ranks_error_file_is_read_as_its_record_and_its_stdout_stays_in_its_file_when_filtered_out(
        tmp_path, capfd) -> None:
    group = group_of(tmp_path, local_ranks_filter=(0,), tee="1")
    record = {"message": {"message": "ValueError: bad", "extraInfo": {"py_callstack": "", "timestamp": "1"}}}
    write = f"import json, os; json.dump({record!r}, open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w'))"
    start(group, {0: "import time; time.sleep(60)", 1: f"{write}; print('hidden'); raise SystemExit(5)"})
    assert group.wait(30) == "failed"
    group.stop(signal.SIGTERM, 5)
    group.close(2)
    failure = group.failures()[1]
    assert (failure.exitcode, failure.error_file_data) == (5, record)
    assert group.failure_outcome().failure.cause.exception == "ValueError: bad"
    assert "hidden" not in capfd.readouterr().out
    assert [path.read_text() for path in tmp_path.glob("run_*/attempt_0/1/stdout.log")] == ["hidden\n"]


class _Stopped(Exception):
    """A stop signal's exception (RanksStopped), raised as a rank's start returns."""


@pytest.mark.timeout(60)
def test_a_stop_raised_just_as_a_rank_started_still_stops_that_rank(tmp_path, monkeypatch) -> None:
    group = group_of(tmp_path)
    started = group._processes.start

    def start_then_stop(*args, **kwargs):
        started(*args, **kwargs)
        raise _Stopped

    monkeypatch.setattr(group._processes, "start", start_then_stop)
    with pytest.raises(_Stopped):
        start(group, {0: "import time; time.sleep(60)"})
    group.stop(signal.SIGTERM, 5)  # a KeyError before: the rank had started, its global rank was not yet known
    group.close(2)
    assert group._processes.processes[0].returncode == -signal.SIGTERM
