"""The launcher's own error file, in-process: what is written for each way a job ends, in torch's format."""

from __future__ import annotations

import json
from pathlib import Path

from launcher.run.failure.rank_failure import RankFailure, hand_on_root_cause, parent_error_record

RECORD = {"message": {"message": "ValueError: x", "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1"}}}


def _failure(exitcode: int, record: dict | None) -> RankFailure:
    return RankFailure(rank=0, host="h", exitcode=exitcode, message="", output_tail=(), record=record)


def test_the_rank_s_record_is_handed_on_with_its_exit_code_even_a_signal_s() -> None:
    for exitcode in (1, -9):
        written = parent_error_record(128 + 9 if exitcode < 0 else exitcode, None, _failure(exitcode, RECORD))
        assert written["message"]["errorCode"] == exitcode
        assert written["message"]["message"] == "ValueError: x"
    assert "errorCode" not in RECORD["message"]  # the rank's record itself is left as it was


def test_a_plain_message_record_is_handed_on_unchanged_as_torch_leaves_it() -> None:
    assert parent_error_record(1, None, _failure(1, {"message": "text"})) == {"message": "text"}


def test_nothing_is_written_for_success_or_a_rank_without_a_record(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    assert hand_on_root_cause(str(path), 0, None, None) is None
    assert hand_on_root_cause(str(path), 3, "rank 0 failed", _failure(3, None)) is None
    assert not path.exists()


def test_a_failure_of_the_launch_itself_is_written_as_torch_records_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    path.write_text("an older job's")
    assert hand_on_root_cause(str(path), 1, "rendezvous failed: timeout", None) is None
    message = json.loads(path.read_text())["message"]
    assert message["message"] == "rendezvous failed: timeout"
    assert int(message["extraInfo"]["timestamp"]) > 0 and message["extraInfo"]["py_callstack"]


def test_a_file_that_cannot_be_written_is_a_note_not_a_crash(tmp_path: Path) -> None:
    note = hand_on_root_cause(str(tmp_path / "missing" / "error.json"), 1, "failed", None)
    assert note is not None and "TORCHELASTIC_ERROR_FILE" in note and "was not written" in note
