"""The launcher's watch over a node's ranks while they run (docs/CONTRACT.md section 9), the same on both paths: one
thread per rank group (launcher/run/group/rank_group.py) that reads each running rank's progress file every LOOK_SECONDS
(a few hundred bytes each, no signal, nothing asked of the rank), names a slow rank once (stragglers.py, with the
frame where it spends the time: a few stack dumps of it and a peer; again when the rank or its frame changes), a
rank that compiles alone once the job steps (lone_compiles.py, from the ranks' compile state), and a hang once per
stall (stalls.py, with the grouped stacks). With `--on-hang stop` a hang ends the job as --timeout does: the
driver's next look at the group raises JobHung, the stacks are taken and the ranks stopped, exit 124.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from launcher.contract.hosts import this_host
from launcher.escaped import one_line
from launcher.rank.compile_state import read_compile_state
from launcher.run.scope.job_outcome import JobTimeout
from launcher.run.stacks import ask_ranks, stack_lines, summary_lines
from launcher.run.group.terminal_lines import terminal
from launcher.run.watch.lone_compiles import LoneCompiles
from launcher.run.watch.progress_file import RankProgress, read_progress
from launcher.run.watch.rank_frames import busiest_frame, place_of
from launcher.run.watch.stalls import hang_line, is_hang, stall_limit, usual_step
from launcher.run.watch.stragglers import SlowRankLines, Straggler, find_stragglers
from launcher.signal_rules import start_thread

__all__ = ["JobWatch", "JobHung", "LOOK_SECONDS", "ON_HANG_CHOICES"]

LOOK_SECONDS = 0.5
ON_HANG_CHOICES = ("report", "stop")


class JobHung(JobTimeout):
    """--on-hang stop found a hang: the job ends as at --timeout (exit 124), for this reason."""

    def __init__(self, why: str) -> None:
        super().__init__(0.0)
        self.why = why

    def reason(self) -> str:
        return self.why


class JobWatch:
    """Watches the ranks `running()` gives (global rank -> pid), which answer in `folder`."""

    def __init__(self, folder: Path, on_hang: str, running: Callable[[], dict[int, int]]) -> None:
        self._folder, self._on_hang, self._running = folder, on_hang, running
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._steps, self._last_step = 0, time.monotonic()
        self._stall_said = False
        self._slow_lines, self._lone = SlowRankLines(), LoneCompiles()
        self.hung: str | None = None

    def start(self) -> None:
        """Start watching, with signals deferred (`start_thread`): a stop that came between the thread's making and
        its start had `close` join a thread never started, the launcher's internal error."""
        if self._thread is None:
            thread = threading.Thread(target=self._watch, name="accel-watch", daemon=True)
            start_thread(thread)
            self._thread = thread

    def close(self) -> None:
        """Stop watching (before the ranks are stopped, or their stacks taken for another reason)."""
        self._closed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def check(self) -> None:
        """Raise JobHung when --on-hang stop found a hang."""
        if self.hung is not None and not self._closed.is_set():
            raise JobHung(self.hung)

    def _watch(self) -> None:
        while not self._closed.wait(LOOK_SECONDS):
            try:
                self._look()
            except Exception as exc:  # noqa: BLE001  (the watch must never end the job: it stops, said once)
                terminal(2).note(one_line(f"note: the watch over the ranks stopped: {type(exc).__name__}: {exc}"))
                return

    def _look(self) -> None:
        ranks = self._running()
        if not ranks:
            return
        progress = {rank: read_progress(self._folder, rank) for rank in ranks}
        steps, now = sum(p.steps for p in progress.values()), time.monotonic()
        if steps != self._steps:
            self._steps, self._last_step, self._stall_said = steps, now, False
        self._look_for_stragglers(progress, ranks, steps, now)
        if steps:
            states = {rank: read_compile_state(self._folder, rank) for rank in ranks}
            lone = self._lone.look(states, {rank: p.steps for rank, p in progress.items()}, now)
            if lone is not None:
                terminal(2).note(one_line(lone.line(this_host())))
        if steps and not self._stall_said:
            usual = usual_step(progress)
            if now - self._last_step >= stall_limit(usual):
                self._stall_said = True
                self._say_stall(ranks, now - self._last_step, usual)

    def _look_for_stragglers(self, progress: dict[int, RankProgress], ranks: dict[int, int], steps: int,
                             now: float) -> None:
        """Name the slow ranks as SlowRankLines says: once settled; again when they or their frames change."""
        def frame_of(rank: int) -> str | None:
            others = {other: p.busy_seconds() or 0.0 for other, p in progress.items() if other != rank}
            median = statistics.median(others.values()) if others else 0.0
            peer = min(others, key=lambda other: abs(others[other] - median), default=None)
            return busiest_frame(rank, peer, ranks, self._folder, self._closed)

        for straggler, frame in self._slow_lines.look(find_stragglers(progress), steps, now, frame_of):
            self._say_straggler(straggler, frame)

    def _say_straggler(self, slow: Straggler, frame: str | None) -> None:
        where = f"; it spends the time in {frame}" if frame else ""
        ratio = f", {slow.busy / slow.others_busy:.1f}x" if slow.others_busy > 0 else ""
        terminal(2).note(one_line(
            f"rank {slow.rank} on {this_host()} is slow, the other ranks wait for it step after step: "
            f"{slow.busy:.3f} s of work a step against the median rank's {slow.others_busy:.3f} s "
            f"(+{slow.extra:.3f} s{ratio}; the step {slow.step:.3f} s){where}"))

    def _say_stall(self, ranks: dict[int, int], stalled: float, usual: float | None) -> None:
        answers = ask_ranks(ranks, self._folder)
        places = place_of(answers)
        line = hang_line(places, stalled, usual, this_host())
        if is_hang(places) and self._on_hang == "stop":
            self.hung = "the job hung (--on-hang stop)"
            terminal(2).note(one_line(line))
            return
        lines = [line, *(f"  {text}" for text in summary_lines(answers)), *(f"  {text}" for text in
                                                                            stack_lines(answers))]
        terminal(2).note("\n".join(one_line(text) for text in lines))
