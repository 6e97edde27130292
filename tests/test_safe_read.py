"""Reading user-named files: regular files only, bounded, and never blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launcher.shared_files import UnsafeFileError, read_user_text


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


@pytest.mark.parametrize(("make", "problem"), [
    (lambda path: path.symlink_to(path.with_name("target")), "is a symbolic link"),
    (lambda path: os.chown(path, 65534, 65534), "is owned by uid 65534, not by this user"),
    (lambda path: path.chmod(0o666), r"is writable by group or others \(mode 0666\)"),
    (lambda path: path.chmod(0o620), r"is writable by group or others \(mode 0620\)"),
])
def test_a_file_to_trust_must_be_the_users_own_and_reached_through_no_link(tmp_path: Path, make, problem) -> None:
    (tmp_path / "target").write_text("x")
    path = tmp_path / "file"
    path.write_text("x")
    path.chmod(0o644)
    assert read_user_text(str(path), own_only=True) == "x"
    if "symbolic" in problem:
        path.unlink()
    make(path)
    with pytest.raises(UnsafeFileError, match=problem):
        read_user_text(str(path), own_only=True)
