"""A rank's log is opened without ever blocking, whatever a rank put in its place (launcher/run/group/rank_logs.py): a
regular file or the null device is appended to; a FIFO (no reader: the open would wait for one), a folder or a
link is refused at once, and the launcher then writes that log nowhere and says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launcher.run.group.rank_logs import append_to


def test_a_regular_file_is_appended_to_and_a_new_one_is_private(tmp_path: Path) -> None:
    (tmp_path / "old.log").write_bytes(b"kept\n")
    with append_to(str(tmp_path / "old.log")) as log:
        log.write(b"more\n")
    with append_to(str(tmp_path / "new.log")) as log:
        log.write(b"first\n")
    assert (tmp_path / "old.log").read_bytes() == b"kept\nmore\n"
    assert (tmp_path / "new.log").stat().st_mode & 0o777 == 0o600


def test_the_null_device_is_taken(tmp_path: Path) -> None:
    with append_to(os.devnull) as log:
        assert log.write(b"gone") == 4


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_what_a_rank_put_in_a_logs_place_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "stdout.log"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        (tmp_path / "elsewhere").write_bytes(b"")
        path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        append_to(str(path))
    assert not (tmp_path / "elsewhere").exists() or (tmp_path / "elsewhere").read_bytes() == b""


@pytest.mark.timeout(10)
def test_a_fifo_with_a_reader_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "stderr.log"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            append_to(str(path))
    finally:
        os.close(reader)
