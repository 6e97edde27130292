"""One node's ranks for one attempt, the same under both drivers: the direct path's loop
(launcher/run/direct_run.py) and torch elastic's agent (launcher/run/engine/rank_agent.py).

The group starts each rank from its argv and environment in a session of its own, its teed streams copied to
their files and the terminal under their prefixes (rank_logs.py), watches their exits (rank_processes.py),
stops them within the shutdown window (rank_stop.py), sweeps what they left (reaper.py), and gives the first
failure's account (launcher/run/failure/): among the ranks that ended with a non-zero status (those the
teardown stopped included, as torch elastic counts them), the first to exit. Before a failure stops the ranks that
still run, and at the driver's word (--timeout), it prints their stacks (launcher/run/stacks/); at its end, a rank
whose count of compiled graphs differs from the others'. While they run it watches their progress (launcher/run/watch/):
the slow rank, a hang (--on-hang).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from launcher.contract.hosts import this_host
from launcher.contract.names import ERROR_FILE_VAR
from launcher.run.failure.oom_kill import OomWatch
from launcher.run.failure.rank_failure import (ended_how, failure_from_engine, first_failure,
                                               lost_peer_note, others_text, tail_lines)
from launcher.run.failure.root_cause import read_error_file
from launcher.run.scope.job_outcome import JobOutcome
from launcher.run.scope.job_signals import StopState
from launcher.run.group.rank_logs import RankLogs
from launcher.run.group.rank_processes import RankProcesses
from launcher.run.group.rank_stop import stop_ranks
from launcher.run.scope.reaper import sweep_descendants
from launcher.run.stacks.job_stacks import JobStacks
from launcher.run.group.terminal_lines import terminal
from launcher.run.watch.job_watch import LOOK_SECONDS, JobWatch
from launcher.signal_rules import FORWARDED, STOP, exit_status

__all__ = ["GroupEnd", "RankExit", "RankGroup"]

GroupEnd = Literal["failed", "succeeded"]

# How long the copies of the ranks' output may take to reach the end of their pipes once the ranks are gone.
COPY_DRAIN_SECONDS = 2.0
# How long the other ranks get to end by themselves once one failed, before they are stopped.
FAILURE_SETTLE_SECONDS = 0.3
# The signals a group is stopped with: a stop signal, one passed on (--signals-to-handle), SIGKILL after the window.
_STOP_SIGNALS = STOP | FORWARDED | {signal.SIGKILL}
# torch's ProcessFailure for a rank that left no error file.
_NO_RECORD = {"message": "<NONE>"}


@dataclass(frozen=True)
class RankExit:
    """A rank that ended with a non-zero status, with the fields torch's agent reads of its ProcessFailure."""

    local_rank: int
    pid: int
    exitcode: int
    timestamp: int  # seconds since the epoch, as torch's
    error_file_data: Mapping[str, object] = field(default_factory=lambda: dict(_NO_RECORD))


class RankGroup:
    """The ranks of one attempt: `start` each, `wait` for their exits, then `end` them (`stop`, the sweep,
    `close`); `stopping` is the job's stop (launcher/run/scope/job_signals.py), a stop signal never reaches a fresh one."""

    def __init__(self, logs: RankLogs, stacks: JobStacks | None = None, stopping: StopState | None = None,
                 on_hang: str | None = None) -> None:
        self.logs = logs
        self.stacks = stacks
        self.stopping = stopping if stopping is not None else StopState()
        self.ranks: dict[int, int] = {}  # local rank -> global rank
        self._processes = RankProcesses()
        self._ended: dict[int, float] = {}  # local rank -> the time.time() its exit was handed over
        self._stopped: set[int] | None = None  # local ranks still running when the group was first stopped
        self._failed_on_its_own: int | None = None  # the first rank that failed before any stop: its local rank
        self._oom = OomWatch()
        # The watch over the ranks' progress (launcher/run/watch/): with the stacks' folder, as --on-hang says.
        self._watch = JobWatch(stacks.folder, on_hang, self._running) if stacks and on_hang else None

    def start(self, local_rank: int, argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int] = ()) -> int:
        """Start local rank `local_rank` (its global rank is the environment's RANK); its pid."""
        env = dict(env)
        error_file = self.logs.error_file(local_rank)
        if error_file is not None:
            env[ERROR_FILE_VAR] = error_file
        if self.stacks is not None:
            env.update(self.stacks.environment())
        stdout, stderr = self.logs.popen_streams(local_rank)
        # Known before the rank exists: a stop signal raised just after its start still finds its global rank.
        self.ranks[local_rank] = int(env.get("RANK", local_rank))
        process = self._processes.start(local_rank, argv, env, stdout, stderr, pass_fds)
        self.logs.start_copies(local_rank, process)
        if self._watch is not None:
            self._watch.start()
        return process.pid

    def wait(self, seconds: float | None) -> GroupEnd | None:
        """Wait up to `seconds` (None: as long as it takes) for the group to end: "failed" as soon as a rank
        failed, "succeeded" once every rank succeeded, None while they run; raises JobHung (a JobTimeout) when
        --on-hang stop found a hang, while no stop began."""
        if self._watch is not None and self._stopped is None:
            self._watch.check()
            seconds = LOOK_SECONDS if seconds is None else min(seconds, LOOK_SECONDS)
        ended = self._processes.wait_exits(seconds)
        self._ended.update(dict.fromkeys(ended, time.time()))
        failed = [local_rank for local_rank in ended if self._processes.processes[local_rank].returncode]
        if failed:
            if self._failed_on_its_own is None and self._stopped is None:
                self._failed_on_its_own = failed[0]
            return "failed"
        return None if self._processes.running() else "succeeded"

    def pids(self) -> dict[int, int]:
        """Each rank's pid by local rank, as torch's PContext gives them (its agent's checks read them)."""
        return {local_rank: process.pid for local_rank, process in self._processes.processes.items()}

    def send(self, signum: int) -> int:
        """Send `signum` to every running rank's own process; to how many."""
        return self._processes.send(signum)

    def report_stacks(self, why: str) -> None:
        """Print the running ranks' stacks (launcher/run/stacks/), before they are stopped for `why`: the stop has
        begun, so a stop signal meanwhile only hurries it (the outcome stays `why`'s)."""
        if self._watch is not None:
            self._watch.close()
        if self.stacks is not None and self._stopped is None:
            running = self._running()
            with self.stopping.ending():
                self.stacks.report(running, why)

    def stop(self, signum: int, window: float) -> None:
        """Stop the running ranks with `signum`, SIGKILL after `window` seconds (launcher/run/group/rank_stop.py); a
        rank's own failure first has the others' stacks printed."""
        if self._watch is not None:
            self._watch.close()
        if self._stopped is None:  # the first stop: the ranks still running then are stopped, any other failed
            self._settle()
            running = {local_rank for local_rank, process in self._processes.processes.items()
                       if process.returncode is None}
            failed = self._failed_on_its_own
            if failed is not None and running and not self._refused(failed):
                self.report_stacks(f"rank {self.ranks[failed]} failed")
            self._stopped = running
        by_rank = {self.ranks[local_rank]: process for local_rank, process in self._processes.processes.items()}
        stop_ranks(by_rank, signum, window, self.stopping, wait=lambda seconds: self.wait(seconds))

    def _running(self) -> dict[int, int]:
        """The running ranks' pids, by global rank (the watch's thread asks too: a copy of the table, taken at once)."""
        return {self.ranks[local_rank]: process.pid for local_rank, process in list(self._processes.processes.items())
                if process.returncode is None}

    def _settle(self) -> None:
        """After a failure, the ranks failing alike a moment later end by themselves, with their own status and
        whole tracebacks, before the others are stopped (at most FAILURE_SETTLE_SECONDS)."""
        deadline = time.monotonic() + (FAILURE_SETTLE_SECONDS if self._failed() else 0.0)
        while True:
            self.wait(max(0.0, deadline - time.monotonic()))
            if not self._processes.running() or time.monotonic() >= deadline:
                return

    def end(self, signum: int, window: float) -> None:
        """The one way an attempt ends, on both paths: stop the running ranks (`stop`), sweep whatever they left
        (a process a rank started and left holding its pipe would hold the drain for COPY_DRAIN_SECONDS),
        then `close`."""
        self.stop(signum, window)
        sweep_descendants(window, self.stopping)
        self.close()
        note = self.stacks.compile_note(self.ranks.values()) if self.stacks is not None else None
        if note is not None:
            terminal(2).note(f"note: {note}")

    def close(self, drain_seconds: float = COPY_DRAIN_SECONDS) -> None:
        """The ranks are gone: let the copies reach the end of their streams, then close the files."""
        self._processes.close()
        self.logs.finish(drain_seconds)

    def failures(self) -> dict[int, RankExit]:
        """Every rank that ended with a non-zero status, by global rank, with its error file's record (torch's
        agent records it for --event-log-handler)."""
        return {rank: replace(ended, error_file_data=self._record(ended.local_rank))
                for rank, ended in self._failed().items()}

    def failure_outcome(self) -> JobOutcome:
        """The first failure's account (call it once the ranks are gone and the copies drained)."""
        failed = self._failed()
        rank, failure = first_failure(failed, self._processes.exited)
        log = self.logs.stderr_log(failure.local_rank)
        tail = tail_lines(log) if log is not None else ()
        # A rank failed by itself when it ended with a status of its own, not a stop signal's (its default
        # action, or 128 + its number from a handler): ranks failing alike exit within the same moment.
        failed_too = sorted(other for other, ended in failed.items()
                            if other != rank and ended.exitcode > 0 and ended.exitcode - 128 not in _STOP_SIGNALS)
        stopped = {self.ranks[local_rank] for local_rank in self._stopped or ()} - {rank, *failed_too}
        account = replace(failure_from_engine(rank, failure.exitcode, self.logs.error_file(failure.local_rank), tail),
                          others=others_text(failed_too, bool(stopped)),
                          shown_under=self.logs.stderr_shown_under(failure.local_rank),
                          out_of_memory=self._oom.killed_by_oom(failure.exitcode))
        note = None if account.rendezvous else lost_peer_note(account.output_tail)
        message = account.summary() if note is None else f"{account.summary()}\n  {note}"
        return JobOutcome(exit_status(failure.exitcode), message, account)

    def restart_note(self, attempt: int, attempts: int) -> str:
        """The line that says this attempt failed and the next starts: which rank, how it ended."""
        rank, failure = first_failure(self._failed(), self._processes.exited)
        return (f"rank {rank} on {this_host()} ended with {ended_how(failure.exitcode)}; the ranks "
                f"restart: attempt {attempt} of "
                f"{attempts} (--max-restarts {attempts - 1})")

    def _failed(self) -> dict[int, RankExit]:
        """Every rank that ended with a non-zero status, by global rank; no error file read."""
        return {self.ranks[local_rank]: RankExit(local_rank, process.pid, process.returncode,
                                                 int(self._ended.get(local_rank, time.time())))
                for local_rank, process in self._processes.processes.items() if process.returncode}

    def _refused(self, local_rank: int) -> bool:
        """Whether the rank refused the backend, or to start: its one line is the whole report (no stacks)."""
        process = self._processes.processes[local_rank]
        return failure_from_engine(self.ranks[local_rank], process.returncode or 0, self.logs.error_file(local_rank),
                                   ()).validation

    def _record(self, local_rank: int) -> Mapping[str, object]:
        record = read_error_file(self.logs.error_file(local_rank)).record
        return dict(record) if isinstance(record, Mapping) else dict(_NO_RECORD)

