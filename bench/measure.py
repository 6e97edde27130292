"""Timing, memory and reporting helpers for the benches: run commands, watch a launcher's memory, interleave
contenders, summarise, describe the machine."""

from __future__ import annotations

import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

BIN = Path(sys.executable).parent
# How often a launcher's VmHWM is read while it runs (a high-water mark: the last read is its peak so far).
RSS_POLL_SECONDS = 0.02
Sample = TypeVar("Sample")


@dataclass(frozen=True)
class Row:
    """One line of the table: a scenario, its unit, and each contender's samples."""

    scenario: str
    unit: str
    accel: Sequence[float]
    other: Sequence[float] | None
    other_name: str = "torchrun"

    @property
    def ratio(self) -> float | None:
        if not self.other:
            return None
        return statistics.median(self.accel) / statistics.median(self.other)


def run(command: Sequence[str], env: Mapping[str, str], cwd: Path, expect: int = 0) -> float:
    """Wall seconds from start to exit of `command` (stdout to /dev/null); its exit status must be `expect`."""
    start = time.perf_counter()
    done = subprocess.run(list(command), env=dict(env), cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    check_status(command, done.returncode, expect, done.stderr)
    return elapsed


def check_status(command: Sequence[str], status: int, expect: int, stderr: str) -> None:
    """A run that ended otherwise than the scenario means measures nothing: stop the benchmark."""
    if status != expect:
        raise RuntimeError(f"{' '.join(command)} exited {status}, expected {expect}:\n{stderr[-2000:]}")


def peak_rss_mib(command: Sequence[str], env: Mapping[str, str], cwd: Path) -> float:
    """The launcher process's own peak RSS (VmHWM, polled until it exits; its ranks not counted)."""
    process = subprocess.Popen(list(command), env=dict(env), cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    status = Path(f"/proc/{process.pid}/status")
    while process.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    check_status(command, process.returncode, 0, "")
    return peak / 1024


def interleave(contenders: Mapping[str, Callable[[], Sample]], runs: int, warmup: int = 1) -> dict[str, list[Sample]]:
    """Run each contender in turn, `warmup` rounds thrown away, then `runs` rounds kept."""
    samples: dict[str, list[Sample]] = {name: [] for name in contenders}
    for round_number in range(warmup + runs):
        for name, measure in contenders.items():
            value = measure()
            if round_number >= warmup:
                samples[name].append(value)
    return samples


def watch_peak_rss(pid: int) -> list[int]:
    """A list a daemon thread fills with the process's VmHWM (KiB) until the process is gone: its own peak, not
    its children's."""
    peaks: list[int] = []
    status = Path(f"/proc/{pid}/status")

    def poll() -> None:
        while True:
            try:
                text = status.read_text()
            except OSError:
                return
            hwm = [line for line in text.splitlines() if line.startswith("VmHWM:")]
            if not hwm:  # a zombie: nothing left to read
                return
            peaks.append(int(hwm[0].split()[1]))
            time.sleep(RSS_POLL_SECONDS)

    threading.Thread(target=poll, daemon=True).start()
    return peaks


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def summary(values: Sequence[float], unit: str) -> tuple[str, str]:
    """(median, min-max) formatted for `unit`."""
    digits = 2 if unit == "s" else 1
    low, high = min(values), max(values)
    return f"{statistics.median(values):.{digits}f}", f"{low:.{digits}f}-{high:.{digits}f}"


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| scenario | unit | accel-launch median | min-max | other | other median | min-max | ratio accel/other |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        accel_median, accel_range = summary(row.accel, row.unit)
        if row.other:
            other_median, other_range = summary(row.other, row.unit)
            other_name = row.other_name
        else:
            other_median = other_range = other_name = "-"
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else "-"
        lines.append(f"| {row.scenario} | {row.unit} | {accel_median} | {accel_range} | {other_name} | "
                     f"{other_median} | {other_range} | {ratio} |")
    return "\n".join(lines)


def machine() -> list[str]:
    """The machine the figures come from, one fact per line."""
    import torch  # imported here only, after the measurements, for its version

    return [
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"CPU: {_cpu_model()}, {os.cpu_count()} logical cores",
        f"memory: {_memory_gib():.1f} GiB",
        f"OS: {platform.platform()}",
        f"Python: {platform.python_version()}, torch {torch.__version__}",
    ]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
