"""Rank output on the terminal (launcher/run/group/terminal_lines.py, output_copy.py): in chunks, bounded, live, in
place, lines whole; a log that cannot be written or a terminal that is gone never stops the copy."""

from __future__ import annotations

import errno
import os
import threading
import tracemalloc

import pytest

from launcher.run.group.output_copy import OutputCopies
from launcher.run.group.rank_logs import FilteredLines
from launcher.run.group.terminal_lines import PENDING_BOUND, RankLines, Terminal


class Screen:
    """What the terminal was given, in order."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data


def lines_on(screen: Screen, prefix: bytes = b"[rank0]:") -> tuple[Terminal, RankLines]:
    terminal = Terminal(screen.write)
    return terminal, RankLines(terminal, prefix)


def test_every_complete_line_goes_out_at_once_under_the_prefix_and_the_rest_waits_for_its_end() -> None:
    screen = Screen()
    _, rank = lines_on(screen)
    rank.feed(b"one\ntw")
    assert bytes(screen.data) == b"[rank0]:one\n"
    rank.feed(b"o\n\n")
    assert bytes(screen.data) == b"[rank0]:one\n[rank0]:two\n[rank0]:\n"


def test_a_progress_bar_is_redrawn_in_place_as_each_redraw_comes() -> None:
    screen = Screen()
    _, rank = lines_on(screen)
    for percent in (0, 50):
        rank.feed(b"\r%d%%|" % percent)
        assert screen.data.endswith(b"[rank0]:%d%%|" % percent)  # shown now, not at the next \r
    rank.feed(b"\r100%|\n")
    assert bytes(screen.data) == b"[rank0]:0%|\r[rank0]:50%|\r[rank0]:100%|\n"


def test_an_unfinished_line_is_shown_when_the_stream_falls_quiet_and_continued_without_a_second_prefix() -> None:
    screen = Screen()
    _, rank = lines_on(screen)
    rank.feed(b"Password: ")
    rank.quiet()
    rank.feed(b"ok\n")
    assert bytes(screen.data) == b"[rank0]:Password: ok\n"


def test_two_ranks_never_share_a_line_and_the_line_ended_for_the_other_is_not_ended_twice() -> None:
    screen = Screen()
    terminal = Terminal(screen.write)
    zero, one = RankLines(terminal, b"[rank0]:"), RankLines(terminal, b"[rank1]:")
    zero.feed(b"\r50%")
    one.feed(b"hello\n")
    zero.feed(b"\n")
    assert bytes(screen.data) == b"[rank0]:50%\n[rank1]:hello\n"


def test_a_prefix_the_rank_wrote_itself_is_not_doubled_and_a_one_rank_job_has_none() -> None:
    screen = Screen()
    _, rank = lines_on(screen)
    rank.feed(b"[rank0]:from torch\n")
    _, solo = lines_on(screen, b"")
    solo.feed(b"alone\n")
    assert bytes(screen.data) == b"[rank0]:from torch\nalone\n"


def test_a_line_of_the_launchers_own_that_a_rank_prints_starts_its_line() -> None:
    screen = Screen()
    _, rank = lines_on(screen)
    rank.feed(b"accel-launch: note: the code's backend is used\nmine accel-launch: \n")
    assert bytes(screen.data) == b"accel-launch: note: the code's backend is used\n[rank0]:mine accel-launch: \n"


def test_a_stream_that_ends_without_a_newline_gets_its_line_ended() -> None:
    screen = Screen()
    terminal, rank = lines_on(screen)
    rank.feed(b"last words")
    rank.close()
    terminal.note("after the job")
    assert bytes(screen.data) == b"[rank0]:last words\naccel-launch: after the job\n"


def test_a_50_mb_line_without_a_newline_costs_under_a_mib_and_reaches_the_terminal_whole() -> None:
    written = [0]
    rank = RankLines(Terminal(lambda data: written.__setitem__(0, written[0] + len(data))), b"[rank0]:")
    chunk = b"x" * 65536
    tracemalloc.start()
    for _ in range(50 * 16):
        rank.feed(chunk)
    rank.close()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert written[0] == 50 * 2**20 + len(b"[rank0]:") + 1
    assert peak < 2**20  # a few chunks at once, whatever the line's length


def test_a_terminal_that_is_gone_is_left_alone_and_never_raises() -> None:
    calls = []

    def broken(data: bytes) -> None:
        calls.append(data)
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    terminal = Terminal(broken)
    rank = RankLines(terminal, b"")
    rank.feed(b"a\n")
    rank.feed(b"b\n")
    terminal.note("x")
    assert terminal.gone and len(calls) == 1


class FullLog:
    """A log file on a full disk: takes 10 bytes, then refuses with ENOSPC."""

    name = "stderr.log"

    def __init__(self) -> None:
        self.kept, self.closed = b"", False

    def write(self, data: memoryview) -> int:
        if len(self.kept) >= 10:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.kept += bytes(data[:10 - len(self.kept)])
        return min(len(data), 10)

    def close(self) -> None:
        self.closed = True


@pytest.mark.timeout(20)
def test_a_log_that_cannot_be_written_is_said_once_and_the_pipe_is_drained_to_its_end() -> None:
    screen = Screen()
    terminal = Terminal(screen.write)
    read_end, write_end = os.pipe()
    copies, log = OutputCopies(), FullLog()
    copies.copy_pipe(os.fdopen(read_end, "rb", buffering=0), log, [RankLines(terminal, b"")], "rank 0's log", terminal)
    writer = threading.Thread(target=lambda: [os.write(write_end, b"line %d\n" % n) for n in range(20000)])
    writer.start()
    writer.join(timeout=10)
    os.close(write_end)
    copies.finish(10)
    shown = bytes(screen.data).decode().splitlines()
    notes = [line for line in shown if line.startswith("accel-launch:")]
    assert notes == ["accel-launch: rank 0's log is incomplete: No space left on device "
                     "(the output from here on is not in it)"]
    assert [line for line in shown if not line.startswith("accel-launch:")] == [f"line {n}" for n in range(20000)]
    assert log.kept == b"line 0\nlin" and log.closed


@pytest.mark.timeout(20)
def test_a_pipe_is_copied_to_its_log_and_the_terminal_and_its_matching_lines_to_the_filtered_file(tmp_path) -> None:
    screen = Screen()
    log, filtered = (tmp_path / "stderr.log").open("ab", buffering=0), (tmp_path / "filtered.log").open("ab")
    read_end, write_end = os.pipe()
    copies = OutputCopies()
    lines = [RankLines(Terminal(screen.write), b"[rank1]:"), FilteredLines(filtered, ("loss",), b"[default1]:")]
    copies.copy_pipe(os.fdopen(read_end, "rb", buffering=0), log, lines, "rank 1's log", Terminal(screen.write))
    data = b"a\r" * 3 + b"b" * (3 * PENDING_BOUND) + b"\nloss 1\nother\nlast loss"
    with os.fdopen(write_end, "wb") as rank_end:
        rank_end.write(data)
    copies.finish(10)
    filtered.close()
    assert bytes(screen.data) == (b"[rank1]:a\r" * 3 + b"[rank1]:" + b"b" * (3 * PENDING_BOUND)
                                  + b"\n[rank1]:loss 1\n[rank1]:other\n[rank1]:last loss\n")
    assert (tmp_path / "stderr.log").read_bytes() == data and log.closed
    assert (tmp_path / "filtered.log").read_bytes() == b"[default1]:loss 1\n[default1]:last loss\n"
