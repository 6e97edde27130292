"""A node's record in the job's store (launcher/rank/node_summary.py, docs/CONTRACT.md section 9): read back as its
node took it when the job signed it for that node's key; anything else (another key, a changed byte, a record over
the bound, a field of the wrong kind even when signed) reads as nothing. The ranks are real processes (this one)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

import pytest

from launcher.contract.names import PROGRESS_FILE
from launcher.rank import node_summary
from launcher.rank.node_summary import read_summary, signed_summary, summary_key, summary_seconds
from launcher.rank.progress import _Progress
from launcher.rank.rank_facts import RankLooks
from launcher.run.watch.progress_file import parse_progress

SECRET = b"the-job-secret-0123456789abcdef"


def facts(folder: Path, steps: int = 4):
    record = _Progress(os.open(folder / PROGRESS_FILE.format(rank=3), os.O_RDWR | os.O_CREAT, 0o600))
    for _ in range(steps):
        record.stepped(None, (), {})
    return RankLooks(str(folder), "hosta").take({3: os.getpid()})


def resigned(body: dict, node: int = 0) -> bytes:
    """A record with `body`, signed as the job signs: what a node of another version, or a bug, could write."""
    text = json.dumps(body).encode()
    mac = hmac.new(SECRET, summary_key(SECRET, node).encode() + b"\0" + text, hashlib.sha256).hexdigest()
    return text + b" " + mac.encode()


def test_a_signed_record_reads_back_as_its_node_took_it(tmp_path: Path) -> None:
    taken = facts(tmp_path)
    read = read_summary(SECRET, 0, signed_summary(SECRET, 0, "hosta", taken))

    assert read == taken
    assert parse_progress(read[0].progress).steps == 4 and read[0].host == "hosta" and read[0].alive


@pytest.mark.parametrize("change", ["another node's key", "another secret", "a changed byte", "over the bound"])
def test_a_record_the_job_did_not_sign_for_that_key_reads_as_nothing(tmp_path: Path, change: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    record = signed_summary(b"another-secret-0123456789abcdef" if change == "another secret" else SECRET, 0, "hosta",
                            facts(tmp_path))
    if change == "a changed byte":
        record = record.replace(b'"hosta"', b'"hostb"')
    if change == "over the bound":
        monkeypatch.setattr(node_summary, "MAX_SUMMARY_BYTES", len(record) - 1)

    assert read_summary(SECRET, 1 if change == "another node's key" else 0, record) is None


@pytest.mark.parametrize("rank", [["3", 1, 1.0, "", None, True, False, None, None],  # a rank as text
                                  [3, 1, 1.0, "not base64!", None, True, False, None, None],
                                  [3, 1, float("nan"), "", None, True, False, None, None],
                                  [3, 1, 1.0, "", None, "yes", False, None, None],
                                  [3, 1, 1.0, "A" * 4000, None, True, False, None, None],  # longer than a record
                                  [3, 1, 1.0, ""]])
def test_a_signed_record_with_a_field_of_the_wrong_kind_reads_as_nothing(rank: list) -> None:
    assert read_summary(SECRET, 0, resigned({"version": 1, "host": "hosta", "ranks": [rank]})) is None


def test_the_nodes_write_at_most_20_records_a_second_together() -> None:
    assert summary_seconds(2) == 5.0 and summary_seconds(100) == 5.0 and summary_seconds(1000) == 50.0
