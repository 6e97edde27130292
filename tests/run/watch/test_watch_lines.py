"""When the watch speaks, in-process (docs/CONTRACT.md section 9): the slow rank's line once, again when the slow
ranks or a slow rank's function change (not its line); a rank compiling alone once the job steps, once per compile,
never for a short compile, a first compile before any step, or a compile every rank does."""

from __future__ import annotations

from launcher.run.watch.lone_compiles import ALONE_SECONDS, LoneCompile, LoneCompiles
from launcher.run.watch.stragglers import RECHECK_SECONDS, SlowRankLines, Straggler

SLOW_1 = Straggler(1, 0.18, 0.03, 0.2)
SLOW_2 = Straggler(2, 0.18, 0.03, 0.2)


class Frames:
    """The frame each look samples for a rank, in turn, and how many samples were taken."""

    def __init__(self, *frames: str | None) -> None:
        self.frames, self.asked = list(frames), 0

    def __call__(self, rank: int) -> str | None:
        self.asked += 1
        return self.frames.pop(0)


def test_the_slow_line_is_said_again_when_the_function_changes_not_its_line():
    lines, frames = SlowRankLines(), Frames("t.py:30 in load_batch", "t.py:31 in load_batch", "t.py:50 in evaluate")
    said = [lines.look([SLOW_1], steps, now, frames) for steps, now in ((10, 0.0), (12, 0.5), (14, 1.0))]
    quiet = lines.look([SLOW_1], 16, 1.0 + RECHECK_SECONDS / 2, frames)  # too soon to sample it again
    same_function = lines.look([SLOW_1], 40, 1.0 + RECHECK_SECONDS, frames)
    moved = lines.look([SLOW_1], 80, 1.0 + 2 * RECHECK_SECONDS, frames)

    assert said == [[], [(SLOW_1, "t.py:30 in load_batch")], []]  # once settled: two looks, steps between
    assert (quiet, same_function) == ([], [])
    assert moved == [(SLOW_1, "t.py:50 in evaluate")]
    assert frames.asked == 3


def test_the_slow_line_is_said_again_when_another_rank_is_slow_and_not_when_a_frame_is_unknown():
    lines, frames = SlowRankLines(), Frames(None, "t.py:50 in evaluate", "t.py:30 in load_batch")
    lines.look([SLOW_1], 10, 0.0, frames)
    first = lines.look([SLOW_1], 12, 0.5, frames)
    known = lines.look([SLOW_1], 40, 1.0 + RECHECK_SECONDS, frames)  # the frame was unknown: now it is, quietly
    lines.look([SLOW_2], 42, 2.0 + RECHECK_SECONDS, frames)
    other = lines.look([SLOW_2], 44, 2.5 + RECHECK_SECONDS, frames)

    assert (first, known) == ([(SLOW_1, None)], [])
    assert other == [(SLOW_2, "t.py:30 in load_batch")]


COMPILING = {"state": "compiling", "frame": "/w/train.py:22 forward", "recompile": 1, "graphs": 1}
IDLE = {"state": "idle", "graphs": 1}


def looks(states: list[dict[int, dict | None]], steps: dict[int, int], gap: float = 0.5) -> list[LoneCompile | None]:
    watch = LoneCompiles()
    return [watch.look(state, steps, index * gap) for index, state in enumerate(states)]


def test_a_rank_compiling_alone_after_a_step_is_said_once_per_compile_after_a_second():
    recompile_2 = {**COMPILING, "recompile": 2}
    said = looks([{0: IDLE, 1: COMPILING}] * 5 + [{0: IDLE, 1: recompile_2}] * 3, {0: 5, 1: 5})

    assert said == [None, None, LoneCompile(1, "/w/train.py:22 forward", 1), None, None,
                    None, None, LoneCompile(1, "/w/train.py:22 forward", 2)]
    assert ALONE_SECONDS == 1.0
    assert said[2].line("node7") == ("note: rank 1 on node7 compiles alone (train.py:22 forward, recompile 1) while "
                                     "the other ranks wait for it; TORCH_LOGS=recompiles says why")


def test_a_short_compile_a_first_one_and_one_every_rank_does_are_not_said():
    short = [{0: IDLE, 1: COMPILING}, {0: IDLE, 1: COMPILING}, {0: IDLE, 1: IDLE}] * 3
    assert looks(short, {0: 5, 1: 5}, gap=0.4) == [None] * 9  # under a second each time
    assert looks([{0: IDLE, 1: COMPILING}] * 4, {0: 1, 1: 0}) == [None] * 4  # rank 1's first step not made
    assert looks([{0: COMPILING, 1: COMPILING}] * 4, {0: 5, 1: 5}) == [None] * 4
    assert looks([{0: None, 1: COMPILING, 2: COMPILING}] * 4, {0: 5, 1: 5, 2: 5}) == [None] * 4
    assert looks([{1: COMPILING}] * 4, {1: 5}) == [None] * 4  # alone on its node: its peers are not seen
