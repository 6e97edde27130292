"""The stacks as the user reads them: identical stacks once, the odd ones out first with their own frame, the
frame they wait in, a compiling rank, and a rank that did not answer."""

from __future__ import annotations

from launcher.run.stacks.rank_answers import RankAnswer
from launcher.run.stacks.stack_report import stack_lines, summary_lines

TORCH = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
WATCH = '''Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait

'''


def dump(*frames: str) -> str:
    """A faulthandler dump: a helper thread, then the main thread with `frames` (innermost first) over the program."""
    lines = [f'  File "{frame.split(":")[0]}", line {frame.split(":")[1]} in {frame.split(":")[2]}' for frame in frames]
    return (WATCH + "Current thread 0x00007f0000000002 (most recent call first):\n" + "\n".join(lines) +
            '\n  File "<frozen runpy>", line 88 in _run_code\n')


WAITING = dump(f"{TORCH}:3252:all_reduce", "/job/train.py:21:<module>")
LOADING = dump("/job/train.py:88:load_batch", "/job/train.py:20:<module>")


def test_the_rank_whose_stack_differs_comes_first_named_with_its_own_frame():
    lines = summary_lines([RankAnswer(0, 10, WAITING), RankAnswer(1, 11, LOADING), RankAnswer(2, 12, WAITING)])

    assert lines == ["rank 1 (the odd one out): train.py:88 in load_batch",
                     "ranks 0, 2: train.py:21 in <module>, inside all_reduce (torch/distributed/distributed_c10d.py:3252)"]


def test_ranks_that_share_one_stack_are_said_to():
    lines = summary_lines([RankAnswer(rank, 10 + rank, WAITING) for rank in range(4)])

    assert lines[0] == "all 4 ranks that answered share one stack"
    assert lines[1].startswith("ranks 0, 1, 2, 3: train.py:21 in <module>")


def test_a_compiling_rank_is_said_to_be_compiling_with_the_frame_and_its_recompile():
    compiling = {"state": "compiling", "frame": "/job/train.py:42 forward", "recompile": 2, "graphs": 3}
    lines = summary_lines([RankAnswer(0, 10, WAITING), RankAnswer(1, 11, LOADING, compile=compiling),
                           RankAnswer(2, 12, WAITING)])

    assert lines[0] == "rank 1 (the odd one out): compiling train.py:42 forward (recompile 2)"


def test_a_rank_that_did_not_answer_is_named_with_the_reason():
    lines = summary_lines([RankAnswer(0, 10, WAITING), RankAnswer(1, 11, silent="already gone")])

    assert lines[-1] == "rank 1: no stack: already gone"


def test_every_thread_is_shown_the_main_thread_first_without_the_frames_that_run_the_program():
    lines = stack_lines([RankAnswer(0, 10, WAITING), RankAnswer(1, 11, LOADING), RankAnswer(2, 12, WAITING)])

    assert lines[:5] == ["rank 1, odd one out: 2 thread(s) with Python frames", "  thread 1 (main):",
                         "    train.py:88 in load_batch", "    train.py:20 in <module>", "  thread 2:"]
    assert "<frozen runpy>" not in "\n".join(lines)
