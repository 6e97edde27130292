"""Real `accel-launch` jobs for the fault tests: start, signal, and find what they left running.

Every job gets a unique marker in its environment (FAULTS_JOB_MARKER), inherited by the launcher, its
ranks and anything a rank starts; processes are found by that marker only, never by name. Whatever a
test leaves behind is killed at teardown, so a failing test cannot leak into the next one.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.launches import LAUNCH_PATH

FAULTS = Path(__file__).resolve().parent
SCRIPTS = FAULTS / "scripts"
FAKE_CUDA = FAULTS / "fake_cuda"
MARKER_VAR = "FAULTS_JOB_MARKER"
FIFO = "<a FIFO, made with mkfifo>"  # as the content of a job's file: make a named pipe there instead


class Executable(bytes):
    """As the content of a job's file: these bytes, in a file its owner may execute (mode 755)."""


def job_processes(marker: str) -> list[psutil.Process]:
    """Live processes (zombies aside) whose environment carries `marker`."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(MARKER_VAR) == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_gone(marker: str, timeout: float) -> list[psutil.Process]:
    """Poll until no process of the job is left or `timeout` passes; return the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = job_processes(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def wait_blocked(record_dir: Path, process: subprocess.Popen) -> None:
    """Wait until the rank of `process` is about to block in torch's C++ (scripts/blocked_in_cpp.py writes
    `blocked` just before), and half a second more."""
    deadline = time.monotonic() + 150
    while not (record_dir / "blocked").exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)


def describe(processes: Sequence[psutil.Process]) -> list[str]:
    """pid and command line of each process, for an assertion message."""
    shown = []
    for process in processes:
        try:
            shown.append(f"{process.pid}: {' '.join(process.cmdline())}")
        except psutil.Error:
            shown.append(f"{process.pid}: (gone)")
    return shown


@dataclass
class Finished:
    """How a job ended."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    ended_at: float  # wall clock (time.time), to compare with the mtime of a rank's start file


class Job:
    """One `python -m launcher ...` run, started in the background with its output in files."""

    def __init__(self, args: Sequence[str], workdir: Path, env: Mapping[str, str], command: Sequence[str],
                 files: Mapping[str, str | bytes] | None = None) -> None:
        self.marker = uuid.uuid4().hex
        self.workdir = workdir
        for name, content in (files or {}).items():
            make_file(workdir / name, content)
        self.record_dir = workdir / "records"
        self.record_dir.mkdir(parents=True, exist_ok=True)
        self._out = open(workdir / "stdout.txt", "w+", encoding="utf-8")
        self._err = open(workdir / "stderr.txt", "w+", encoding="utf-8")
        environ = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "PYTEST_"))}
        environ.update(LAUNCH_PATH)
        environ.update({MARKER_VAR: self.marker, "RECORD_DIR": str(self.record_dir), "PYTHONUNBUFFERED": "1"})
        environ.update(env)
        if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
            environ["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], os.environ["PYTHONPATH"]])
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen([*command, *args], cwd=workdir, env=environ, stdout=self._out, stderr=self._err)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def started_ranks(self) -> dict[int, dict[str, str]]:
        """Rank -> the facts its script recorded when it started."""
        ranks = {}
        for path in self.record_dir.glob("started-*"):
            if path.name.endswith(".tmp"):
                continue
            facts = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
            ranks[int(path.name.split("-", 1)[1])] = facts
        return ranks

    def started_time(self, rank: int) -> float:
        """When rank `rank` recorded its start (wall clock)."""
        return (self.record_dir / f"started-{rank}").stat().st_mtime

    def sigterm_time(self, rank: int) -> float:
        """When rank `rank` (a rank that ignores SIGTERM) got its first SIGTERM (wall clock)."""
        return float((self.record_dir / f"sigterm-{rank}").read_text())

    def wait_started(self, count: int, timeout: float = 150) -> dict[int, dict[str, str]]:
        """Wait until `count` ranks recorded their start; fail with the launcher's output if they do not."""
        deadline = time.monotonic() + timeout
        while len(self.started_ranks()) < count:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{count} rank(s) did not start; launcher status {self.proc.poll()}:\n{self.output()[1]}")
            time.sleep(0.05)
        return self.started_ranks()

    def send(self, sig: int) -> float:
        """Send `sig` to the launcher only (not its group); return when it was sent."""
        os.kill(self.proc.pid, sig)
        return time.monotonic()

    def finish(self, timeout: float = 150, since: float | None = None) -> Finished:
        """Wait for the launcher to exit; `seconds` counts from `since` (default: the start)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the launcher did not exit within {timeout}s:\n{self.output()[1]}")
        ended_at = time.time()
        seconds = time.monotonic() - (self.started_at if since is None else since)
        out, err = self.output()
        return Finished(self.proc.returncode, out, err, seconds, ended_at)

    def output(self) -> tuple[str, str]:
        self._out.flush()
        self._err.flush()
        return (self.workdir / "stdout.txt").read_text(), (self.workdir / "stderr.txt").read_text()

    def close(self) -> None:
        for process in job_processes(self.marker):
            try:
                process.kill()
            except psutil.Error:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()


def make_file(path: Path, content: str | bytes) -> None:
    """Text, bytes, an Executable, or (for FIFO) a named pipe at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == FIFO:
        os.mkfifo(path)
    elif isinstance(content, Executable):
        path.write_bytes(content)
        path.chmod(0o755)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def script(name: str) -> str:
    """The path of a fault script."""
    return str(SCRIPTS / name)


def error_lines(stderr: str) -> list[str]:
    """The error lines of a refused launch: ours (`accel-launch: error: ...`) or click's (`Error: ...`)."""
    return [line for line in stderr.splitlines() if line.startswith(("accel-launch: error:", "Error:"))]


def launcher_leftovers(temp: Path) -> list[Path]:
    """What is in `temp` but torch's own inductor cache (`torchinductor_<user>`, made when torch is imported)."""
    return [path for path in temp.iterdir() if not path.name.startswith("torchinductor_")]


def assert_refused(finished: Finished, job: Job, temp: Path, fragments: Sequence[str]) -> None:
    """Exit 2, one error line holding every fragment, no traceback, no rank, nothing left in `temp` or running."""
    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    errors = error_lines(finished.stderr)
    assert len(errors) == 1, finished.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    assert len(errors[0]) < 1200
    assert job.started_ranks() == {}
    assert launcher_leftovers(temp) == []
    assert wait_gone(job.marker, timeout=5) == []
