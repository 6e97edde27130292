"""One parser of /proc/PID/stat (launcher/proc_stat.py), for the keeper, the reaper and a rank's wait for gloo:
the fields after the command's name are counted from its last `)`, whatever the name holds."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from launcher.proc_stat import parse_stat, read_stat

ODD_NAME = "a) b (c"


def test_a_thread_named_with_spaces_and_parentheses_is_read_with_its_name_and_the_fields_after_it() -> None:
    named, done = threading.Event(), threading.Event()

    def run() -> None:
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(ODD_NAME)
        named.set()
        done.wait(10)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert named.wait(10)
        stat = read_stat(f"/proc/self/task/{thread.native_id}/stat")
    finally:
        done.set()
        thread.join()
    assert stat is not None
    assert (stat.pid, stat.name) == (thread.native_id, ODD_NAME) and stat.state in ("R", "S")
    assert (stat.parent, stat.group, stat.session) == (os.getppid(), os.getpgrp(), os.getsid(0))


def test_this_process_is_read_as_the_kernel_sees_it() -> None:
    stat = read_stat("/proc/self/stat")
    assert stat is not None
    assert (stat.pid, stat.state, stat.parent, stat.group, stat.session) == (
        os.getpid(), "R", os.getppid(), os.getpgrp(), os.getsid(0))
    assert stat.start > 0 and not stat.ended


def test_a_line_whose_name_closes_a_parenthesis_early_gives_each_field_its_own_value() -> None:
    fields = " ".join(str(number) for number in range(4, 53))  # the fields after ppid, pgrp and session
    stat = parse_stat(f"4242 ({ODD_NAME}) Z 7 8 9 {fields}\n".encode())
    assert (stat.pid, stat.name, stat.state, stat.parent, stat.group, stat.session) == (4242, ODD_NAME, "Z", 7, 8, 9)
    assert stat.start == 19 and stat.ended  # the 22nd field: the 20th after the name


def test_a_process_that_is_gone_or_a_file_that_is_no_stat_line_reads_as_none(tmp_path: Path) -> None:
    (tmp_path / "stat").write_bytes(b"not a stat line\n")
    assert read_stat(str(tmp_path / "stat")) is None
    assert read_stat("/proc/0/stat") is None
