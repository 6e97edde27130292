"""The refusal a rank hands the engine: a whole error file, or none at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher import shared_files
from launcher.contract.names import REFUSAL_PHRASE, VALIDATION_STATUS
from launcher.rank import refusal


def test_the_refusal_is_one_json_record_in_the_engines_error_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    error_file = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))
    monkeypatch.setenv("RANK", "3")

    with pytest.raises(SystemExit) as exited:
        refusal.refuse("'nope' (from --compile-backend)")

    assert exited.value.code == VALIDATION_STATUS
    message = json.loads(error_file.read_text())["message"]
    assert message.startswith("rank 3 on ") and REFUSAL_PHRASE in message and message.endswith("'nope' (from --compile-backend)")
    assert [path.name for path in tmp_path.iterdir()] == ["error.json"]


def test_a_rank_stopped_while_writing_leaves_no_truncated_error_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The engine parses the error file of every rank it stops, so a truncated one must never be seen.
    error_file = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))

    def stopped_before_the_rename(source: str, target: str) -> None:
        raise KeyboardInterrupt  # stands for the SIGTERM the engine sends the other ranks

    monkeypatch.setattr(shared_files.os, "replace", stopped_before_the_rename)

    with pytest.raises(KeyboardInterrupt):
        refusal.refuse("'nope' (from --compile-backend)")

    assert not error_file.exists()
    assert list(tmp_path.iterdir()) == []  # nor the temporary file
