"""The failure summary names the exception a rank recorded in its error file (torchrun's root cause)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.run.failure.rank_failure import failure_from_engine, tail_lines
from launcher.run.failure.root_cause import RootCause, read_error_file, root_cause
from tests.faults.scripts.error_file_cases import CASES, leave
from tests.launches import SCRIPTS, Launcher

CALLSTACK = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 30, in main\n'
    "    load_shard(7)\n"
    '  File "/job/data.py", line 17, in load_shard\n'
    '    raise ValueError("bad shard 7")\n'
    "ValueError: bad shard 7\n"
)
RECORDED = {"message": {"message": "ValueError: bad shard 7",
                        "extraInfo": {"py_callstack": CALLSTACK, "timestamp": "1"}}}


def test_a_recorded_exception_gives_its_type_message_and_the_frame_that_raised_it() -> None:
    assert root_cause(RECORDED) == RootCause(
        "ValueError: bad shard 7", 'raised at /job/data.py:17 in load_shard: raise ValueError("bad shard 7")'
    )


@pytest.mark.parametrize("data", [{}, {"message": ""}, {"message": "<NONE>"}, {"message": {"extraInfo": {}}}, [], "text"])
def test_an_error_file_without_an_exception_gives_no_root_cause(data: object) -> None:
    assert root_cause(data) is None


def test_a_plain_message_error_file_is_its_own_root_cause() -> None:
    assert root_cause({"message": "rank 0 gave up", "timestamp": 1}) == RootCause("rank 0 gave up")


def error_file(folder: Path, data: object) -> str:
    path = folder / "error.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_the_summary_puts_the_root_cause_before_the_stderr_tail(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("ValueError: bad shard 7\n" + "".join(f"noise {i}\n" for i in range(30)))
    summary = failure_from_engine(1, 1, error_file(tmp_path, RECORDED), tail_lines(log)).summary().splitlines()
    assert summary[1:4] == ["  root cause (from its error file):", "    ValueError: bad shard 7",
                            '    raised at /job/data.py:17 in load_shard: raise ValueError("bad shard 7")']
    assert summary[4] == "  last lines of its stderr:" and summary[-1] == "    noise 29"


def test_without_an_error_file_the_summary_is_the_stderr_tail_alone(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("boom\n")
    for missing in (None, str(tmp_path / "error.json")):
        summary = failure_from_engine(0, 3, missing, tail_lines(log)).summary().splitlines()
        assert summary[1:] == ["  last lines of its stderr:", "    boom"]


@pytest.mark.timeout(20)  # a FIFO with no writer must not block the reader
@pytest.mark.parametrize("case", CASES)
def test_whatever_a_rank_leaves_in_its_error_file_gives_its_status_and_at_most_a_few_kib(tmp_path: Path,
                                                                                        case: str) -> None:
    path = str(tmp_path / "error.json")
    leave(path, case)
    summary = failure_from_engine(0, 7, path, ()).summary()
    assert summary.splitlines()[0].endswith("failed first, with exit code 7; the other ranks were stopped")
    assert CASES[case][1] in summary
    assert len(summary.encode()) < 5 << 10


def test_a_cut_message_keeps_whole_characters_and_says_how_much_was_cut(tmp_path: Path) -> None:
    cause = read_error_file(error_file(tmp_path, {"message": "€" * 2000})).cause  # 3 bytes each: 4096 splits one
    assert cause is not None and cause.exception == "€" * 1365 + " [... 1904 more bytes cut]"


def test_a_huge_stderr_line_is_cut_in_the_tail(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("x" * 50_000 + "\nlast\n")
    assert tail_lines(log) == ("x" * 1024 + " [... 48976 more bytes cut]", "last")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_real_record_decorated_failure_is_named_although_noise_followed_it(launch: Launcher) -> None:
    result = launch([str(SCRIPTS / "record_then_noise.py")])
    assert result.returncode == 1, result.stderr
    summary = result.stderr.split("accel-launch: rank 0 on ", 1)[1].splitlines()
    assert summary[1:3] == ["  root cause (from its error file):", "    ValueError: bad shard 7: checksum mismatch"]
    assert summary[3].startswith(f"    raised at {SCRIPTS / 'record_then_noise.py'}:17 in load_shard: raise ")
    assert summary[-1] == "  its stderr is above"  # streamed as it came (a one-rank job: no prefix), not repeated
    assert result.stderr.count("noise line 39") == 1
