"""The hostfile parser: `host slots=N` lines, comments, blank lines, and every malformed form."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launcher.contract.hosts import HostSlots
from launcher.errors import HostfileError, LaunchError
from launcher.head.hostfile import parse_hostfile, parse_hostfile_text


def test_entries_come_back_in_file_order_with_comments_and_blank_lines_skipped() -> None:
    text = "# cluster\n\nworker-1 slots=3\n  worker-0   slots=1  # small box\n10.0.0.7 slots=8\n"
    assert parse_hostfile_text(text) == (
        HostSlots("worker-1", 3),
        HostSlots("worker-0", 1),
        HostSlots("10.0.0.7", 8),
    )


def test_a_file_on_disk_is_read(tmp_path) -> None:
    path = tmp_path / "hostfile"
    path.write_text("a slots=2\nb slots=1\n")
    assert parse_hostfile(path) == (HostSlots("a", 2), HostSlots("b", 1))


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("a slots=2\na slots=1\n", 2, "listed again (first on line 1)"),
        ("a slots=0\n", 1, "at least 1, got 0"),
        ("a slots=-1\n", 1, "expected slots=N"),
        ("a slots=two\n", 1, "expected slots=N"),
        ("a slots=1.5\n", 1, "expected slots=N"),
        ("a slots=+2\n", 1, "expected slots=N"),
        ("a slots=\n", 1, "expected slots=N"),
        ("a slots=\u0663\n", 1, "expected slots=N"),
        ("a\n", 1, "has no slots=N"),
        ("a 4\n", 1, "expected slots=N"),
        ("a slot=4\n", 1, "expected slots=N"),
        ("a slots = 4\n", 1, "unexpected"),
        ("a slots=4 gpus=8\n", 1, "unexpected 'gpus=8'"),
        ("# ok\nb slots=1\n-oProxyCommand=x slots=1\n", 3, "not a host name"),
        ("a:0 slots=1\n", 1, "not a host name"),
        ("node[1-2] slots=1\n", 1, "not a host name"),
        ("user@a slots=1\n", 1, "not a host name"),
        ("a slots=99999999999999999999\n", 1, "slots=99999999999999999999: at most 4096 ranks per node"),
        ("a slots=4097\n", 1, "at most 4096 ranks per node"),
        ("".join(f"h{index} slots=1\n" for index in range(65537)), 65537, "more than 65536 hosts"),
    ],
)
def test_a_malformed_line_is_an_error_naming_file_line_and_problem(text: str, line: int, words: str) -> None:
    with pytest.raises(HostfileError) as caught:
        parse_hostfile_text(text, "hosts.txt")
    assert caught.value.line == line
    assert str(caught.value).startswith(f"hostfile hosts.txt:{line}: ")
    assert words in str(caught.value)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_a_hostfile_without_hosts_is_an_error(text: str) -> None:
    with pytest.raises(HostfileError, match="lists no hosts"):
        parse_hostfile_text(text, "h")


def test_an_unreadable_file_is_an_error_naming_it(tmp_path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(HostfileError, match=f"hostfile {missing}: no such file"):
        parse_hostfile(missing)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("make", "words"), [
    (os.mkfifo, "is a FIFO, not a regular file"),
    (os.mkdir, "is a directory"),
    (lambda path: Path(path).write_text("a slots=1\n" + "#" * (4 << 20)), "is larger than"),
], ids=["fifo", "directory", "over-4-MiB"])
def test_a_path_that_is_not_a_small_regular_file_is_refused_without_blocking(tmp_path, make, words: str) -> None:
    path = tmp_path / "hosts"
    make(str(path))
    with pytest.raises(HostfileError, match=f"hostfile {path}: {words}"):
        parse_hostfile(path)


def test_a_file_that_is_not_utf8_is_an_error(tmp_path) -> None:
    path = tmp_path / "h"
    path.write_bytes(b"a slots=1\n\xff\xfe\n")
    with pytest.raises(HostfileError, match="is not UTF-8 text"):
        parse_hostfile(path)


def test_the_error_is_a_value_error_and_a_launch_error_which_the_command_line_ends_with_status_2() -> None:
    with pytest.raises(ValueError) as caught:
        parse_hostfile_text("a\n")
    assert isinstance(caught.value, LaunchError)


@given(st.text())
def test_any_text_gives_entries_or_a_hostfile_error(text: str) -> None:
    try:
        entries = parse_hostfile_text(text)
    except HostfileError:
        return
    assert entries and all(entry.slots >= 1 for entry in entries)
