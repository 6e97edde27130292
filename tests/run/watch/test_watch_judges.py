"""The watch's judgements at their seam, in-process: a rank's progress file read back as written (never blocking on
what is not a regular file), the slow rank found from the ranks' usual steps and a one-off pause not, a hang's
limit and its line (docs/CONTRACT.md section 9)."""

from __future__ import annotations

import os
from pathlib import Path

from launcher.contract.names import PROGRESS_FILE
from launcher.rank import progress as rank_progress
from launcher.run.stacks import RankAnswer
from launcher.run.watch.progress_file import RankProgress, read_progress
from launcher.run.watch.rank_frames import place_of
from launcher.run.watch.stalls import hang_line, is_hang, stall_limit
from launcher.run.watch.stragglers import find_stragglers


def steps(step: float, busy: float, count: int = 12, pause_at: int | None = None) -> RankProgress:
    """A rank's progress: `count` steps of `step` wall seconds and `busy` CPU seconds, one of them 2 s long."""
    ends, cpu, wall, used = [], [], 100.0, 1.0
    for number in range(1, count + 1):
        extra = 2.0 if number == pause_at else 0.0
        wall, used = wall + step + extra, used + busy + extra
        ends.append(wall)
        cpu.append(used)
    return RankProgress("training", count, 99.0, tuple(ends), tuple(cpu))


def test_a_record_reads_back_as_the_rank_wrote_it_across_the_ring(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ACCEL_STACKS_DIR", str(tmp_path))
    path = tmp_path / PROGRESS_FILE.format(rank=0)
    record = rank_progress._Progress(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    assert read_progress(tmp_path, 0).phase == "importing"
    for _ in range(rank_progress.RING + 5):
        record.stepped(None, (), {})
    read = read_progress(tmp_path, 0)

    assert (read.phase, read.steps, len(read.ends)) == ("training", rank_progress.RING + 5, rank_progress.RING)
    assert list(read.ends) == sorted(read.ends) and read.step_seconds() is not None
    record.exited()
    assert read_progress(tmp_path, 0).phase == "exited"


def test_what_is_not_a_whole_regular_record_reads_as_no_progress_without_blocking(tmp_path: Path):
    os.mkfifo(tmp_path / PROGRESS_FILE.format(rank=0))  # no writer: an open without O_NONBLOCK would hang
    (tmp_path / PROGRESS_FILE.format(rank=1)).write_bytes(b"ACP1")
    (tmp_path / PROGRESS_FILE.format(rank=2)).write_bytes(b"x" * 800)

    assert [read_progress(tmp_path, rank) for rank in range(4)] == [RankProgress()] * 4


def test_a_rank_with_more_work_every_step_is_slow_and_a_one_off_pause_is_not():
    even = {0: steps(0.2, 0.05, pause_at=5), 1: steps(0.2, 0.05), 2: steps(0.2, 0.05)}  # rank 0: a checkpoint
    slow = {0: steps(0.2, 0.05), 1: steps(0.2, 0.19), 2: steps(0.2, 0.05)}
    found = find_stragglers(slow)

    assert find_stragglers(even) == []
    assert [(s.rank, round(s.extra, 3)) for s in found] == [(1, 0.14)]
    assert find_stragglers({0: steps(0.2, 0.05, count=5), 1: steps(0.2, 0.19, count=5)}) == []  # too few steps


def test_a_slow_rank_is_still_named_when_the_machines_load_stretches_every_step():
    stretched = {0: steps(0.8, 0.03), 1: steps(0.8, 0.18), 2: steps(0.8, 0.03)}  # 3 ranks on 2 busy cores

    assert [s.rank for s in find_stragglers(stretched)] == [1]


def test_ranks_that_all_work_alike_without_waiting_are_not_slow():
    assert find_stragglers({0: steps(0.2, 0.2), 1: steps(0.3, 0.3), 2: steps(0.2, 0.2)}) == []


def test_the_hang_limit_is_ten_usual_steps_within_its_floor_and_cap():
    assert (stall_limit(None), stall_limit(0.1), stall_limit(4.5), stall_limit(30.0)) == (30.0, 30.0, 45.0, 60.0)


DUMP = '''Thread 0x00007f (most recent call first):
  File "/work/{where}", line 14 in {name}
  File "/work/train.py", line 30 in <module>
'''


def test_the_hang_line_names_the_rank_not_waiting_and_a_compiling_one_is_not_hung():
    waiting = DUMP.format(where="venv/lib/site-packages/torch/distributed/distributed_c10d.py", name="all_reduce")
    answers = [RankAnswer(0, 10, waiting), RankAnswer(1, 11, DUMP.format(where="train.py", name="load_batch")),
               RankAnswer(2, 12, waiting)]
    compiling = [answers[0], RankAnswer(1, 11, DUMP.format(where="train.py", name="forward"),
                                        compile={"state": "compiling", "frame": "/w/train.py:9 forward", "graphs": 2})]
    line = hang_line(place_of(answers), 31.0, 0.1, "node7")

    assert is_hang(place_of(answers)) and not is_hang(place_of(compiling))
    assert line == ("no rank finished a step for 31 s (the usual step 0.1 s; a hang is 30 s without one): rank 1 on "
                    "node7 is not waiting in a collective: train.py:14 in load_batch; ranks 0, 2 wait in all_reduce")
    assert "rank 1 on node7 is compiling graph 3 of train.py:9 forward, not hung" in hang_line(
        place_of(compiling), 40.0, None, "node7")
