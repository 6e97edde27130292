"""What compile-once saves users (docs/CONTRACT.md section 7): seconds from the command to the end of the first
compiled training step, the job's CPU seconds, and inductor's cache misses summed over the ranks; cold (a fresh
TORCHINDUCTOR_CACHE_DIR per run) and warm, 1 and 2 ranks, one node and two static nodes on loopback with a cache
folder each; torchrun and `accel-launch --compile-cache off` beside ours, interleaved. Run by hand:
`python bench/bench_compile.py [--repeats N]`; bench/RESULTS-compile.md holds a run's table."""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
STEP = str(Path(__file__).resolve().parent / "scripts" / "compiled_first_step.py")
SECRET = "bench secret shared by both nodes"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(commands: list[list[str]], caches: list[str], extra: dict[str, str]) -> tuple[float, float, int]:
    """Start the commands together (one per node), each with its cache folder: seconds to the first step, CPU
    seconds of all of them, and the job's cache misses."""
    cpu, started = _children_cpu(), time.time()
    processes = [subprocess.Popen(command, env={**os.environ, **extra, "TORCHINDUCTOR_CACHE_DIR": cache},
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for command, cache in zip(commands, caches)]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    line = next(line for output in outputs for line in output.splitlines() if line.startswith("FIRST_STEP"))
    _, stamp, _, misses = line.split()
    return float(stamp) - started, _children_cpu() - cpu, int(misses)


def one_node(launcher: str, ranks: int, mode: str | None) -> list[str]:
    if launcher == "torchrun":
        return [str(BIN / "torchrun"), "--nproc-per-node", str(ranks), STEP]
    return [str(BIN / "accel-launch"), "--nproc-per-node", str(ranks), *(["--compile-cache", mode] if mode else []),
            STEP]


def two_nodes(mode: str) -> list[list[str]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    return [[str(BIN / "accel-launch"), "--nnodes", "2", "--node-rank", str(rank), "--master-addr", "127.0.0.1",
             "--master-port", port, "--compile-cache", mode, STEP] for rank in (0, 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    cases = {
        "cold, 1 rank, accel-launch": lambda: ([one_node("accel", 1, None)], 1),
        "cold, 2 ranks, torchrun": lambda: ([one_node("torchrun", 2, None)], 1),
        "cold, 2 ranks, accel-launch --compile-cache off": lambda: ([one_node("accel", 2, "off")], 1),
        "cold, 2 ranks, accel-launch (job)": lambda: ([one_node("accel", 2, None)], 1),
        "cold, 2 nodes x 1 rank, own caches, off": lambda: (two_nodes("off"), 2),
        "cold, 2 nodes x 1 rank, own caches, job": lambda: (two_nodes("job"), 2),
    }
    warm = {"warm, 2 ranks, torchrun": "torchrun", "warm, 2 ranks, accel-launch (job)": "accel"}
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in [*cases, *warm]}
    warm_cache = tempfile.mkdtemp(prefix="bench-warm-")
    run([one_node("accel", 2, "off")], [warm_cache], {})  # fills the warm cache
    for _ in range(repeats):
        for name, case in cases.items():
            commands, nodes = case()
            caches = [tempfile.mkdtemp(prefix="bench-cold-") for _ in range(nodes)]
            samples[name].append(run(commands, caches, {"ACCEL_COMPILE_CACHE_SECRET": SECRET}))
        for name, launcher in warm.items():
            samples[name].append(run([one_node(launcher, 2, None)], [warm_cache], {}))
    base = statistics.median(sample[0] for sample in samples["cold, 1 rank, accel-launch"])
    print(f"| scenario | first step, s (median of {repeats}) | x 1 rank cold | job CPU, s | misses, summed |")
    print("|---|---|---|---|---|")
    for name, runs in samples.items():
        seconds = statistics.median(sample[0] for sample in runs)
        cpu = statistics.median(sample[1] for sample in runs)
        misses = statistics.median(sample[2] for sample in runs)
        print(f"| {name} | {seconds:.2f} | {seconds / base:.2f} | {cpu:.1f} | {misses:g} |")


if __name__ == "__main__":
    main()
