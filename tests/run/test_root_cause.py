"""The failure summary names the exception a rank recorded in its error file (torchrun's root cause)."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.run.failure import failure_from_engine, tail_lines
from launcher.run.root_cause import RootCause, root_cause
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


def test_the_summary_puts_the_root_cause_before_the_stderr_tail(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("ValueError: bad shard 7\n" + "".join(f"noise {i}\n" for i in range(30)))
    summary = failure_from_engine(1, 1, RECORDED, tail_lines(log)).summary().splitlines()
    assert summary[1:4] == ["  root cause (from its error file):", "    ValueError: bad shard 7",
                            '    raised at /job/data.py:17 in load_shard: raise ValueError("bad shard 7")']
    assert summary[4] == "  last lines of its stderr:" and summary[-1] == "    noise 29"


def test_without_an_error_file_the_summary_is_the_stderr_tail_alone(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("boom\n")
    summary = failure_from_engine(0, 3, {}, tail_lines(log)).summary().splitlines()
    assert summary[1:] == ["  last lines of its stderr:", "    boom"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_real_record_decorated_failure_is_named_although_noise_followed_it(launch: Launcher) -> None:
    result = launch([str(SCRIPTS / "record_then_noise.py")])
    assert result.returncode == 1, result.stderr
    summary = result.stderr.split("accel-launch: rank 0 on ", 1)[1].splitlines()
    assert summary[1:3] == ["  root cause (from its error file):", "    ValueError: bad shard 7: checksum mismatch"]
    assert summary[3].startswith(f"    raised at {SCRIPTS / 'record_then_noise.py'}:17 in load_shard: raise ")
    assert "ValueError" not in "\n".join(summary[5:])  # the tail holds only the noise
    assert summary[-1] == "    noise line 39"
