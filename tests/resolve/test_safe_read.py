"""Reading user-named files: regular files only, bounded, and never blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launcher.resolve.safe_read import UnsafeFileError, read_user_text


def test_a_regular_file_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"a": 1}')
    assert read_user_text(str(path)) == '{"a": 1}'


@pytest.mark.timeout(10)
def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafeFileError, match="is a FIFO, not a regular file"):
        read_user_text(str(tmp_path / "pipe"))


@pytest.mark.parametrize(("path", "problem"), [(".", "is a directory"), ("/dev/zero", "is a character device"),
                                               ("missing", "no such file")])
def test_what_is_not_a_regular_file_is_refused_with_its_kind(tmp_path: Path, path: str, problem: str) -> None:
    with pytest.raises(UnsafeFileError, match=problem):
        read_user_text(str(tmp_path / path) if not path.startswith("/") else path)


def test_a_file_over_the_limit_is_refused_and_one_at_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_text("x" * 11)
    with pytest.raises(UnsafeFileError, match="larger than 10 bytes"):
        read_user_text(str(path), limit=10)
    assert read_user_text(str(path), limit=11) == "x" * 11


def test_bytes_that_are_not_utf8_are_refused_with_their_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1"
    path.write_bytes(b"ab\xff")
    with pytest.raises(UnsafeFileError, match=r"not UTF-8 text \(byte 2\)"):
        read_user_text(str(path))
