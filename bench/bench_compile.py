"""What compile-once saves users (docs/CONTRACT.md section 7): seconds from the command to the end of the first
compiled training step, the job's CPU seconds, and inductor's cache misses summed over the ranks; cold (a fresh
TORCHINDUCTOR_CACHE_DIR per run) and warm, 1 and 2 ranks, one node and two static nodes on loopback with a cache
folder each; what survives the job: the next job on fresh nodes with a compile folder (`--compile-cache-dir`), a
restarted attempt (on the same node, and on a node whose cache is gone), nodes started one by one with no secret
set (one home, so one per-user key); torchrun and `accel-launch --compile-cache off` beside ours, interleaved. A
restart's seconds run from the failed attempt's end to the next attempt's first step. Run by hand:
`python bench/bench_compile.py [--repeats N] [--only TEXT]`; bench/RESULTS-compile.md holds a run's table."""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
STEP = str(Path(__file__).resolve().parent / "scripts" / "compiled_first_step.py")
SECRET = "bench secret shared by both nodes"


def run(commands: list[list[str]], caches: list[str], extra: dict[str, str]) -> tuple[float, list[float], int]:
    """Start the commands together (one per node, or one per rank started by hand), each with its cache folder:
    seconds to the first step, each command's CPU seconds (its process and every process it waited for), and
    the job's cache misses."""
    started = time.time()
    processes = []
    for command, cache in zip(commands, caches):
        env = {**os.environ, **extra, "TORCHINDUCTOR_CACHE_DIR": cache}
        if command[0] == "by-hand":  # a rank started as the user would without a launcher
            env.update(dict(pair.split("=", 1) for pair in command[1:-1]))
            command = [sys.executable, command[-1]]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True))
    outputs, cpu = [], []
    for process in processes:
        outputs.append(process.stdout.read())
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        cpu.append(usage.ru_utime + usage.ru_stime)
    lines = [line.split() for output in outputs for line in output.splitlines()]
    _, stamp, _, misses = next(line for line in lines if line[:1] == ["FIRST_STEP"])
    failed = [float(line[1]) for line in lines if line[:1] == ["FAILED"]]  # a restart: from the attempt that failed
    return float(stamp) - (failed[0] if failed else started), cpu, int(misses)


def _free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def by_hand(ranks: int) -> list[list[str]]:
    """Each rank with torch's variables, as a user starts ranks without a launcher."""
    port = _free_port()
    return [["by-hand", f"RANK={rank}", f"LOCAL_RANK={rank}", f"WORLD_SIZE={ranks}", f"LOCAL_WORLD_SIZE={ranks}",
             "MASTER_ADDR=127.0.0.1", f"MASTER_PORT={port}", STEP] for rank in range(ranks)]


def one_node(launcher: str, ranks: int, mode: str | None, *flags: str) -> list[str]:
    if launcher == "torchrun":
        return [str(BIN / "torchrun"), "--nproc-per-node", str(ranks), *flags, STEP]
    return [str(BIN / "accel-launch"), "--nproc-per-node", str(ranks), *(["--compile-cache", mode] if mode else []),
            *flags, STEP]


def two_nodes(mode: str, *flags: str) -> list[list[str]]:
    port = _free_port()
    return [[str(BIN / "accel-launch"), "--nnodes", "2", "--node-rank", str(rank), "--master-addr", "127.0.0.1",
             "--master-port", port, "--compile-cache", mode, *flags, STEP] for rank in (0, 1)]


def restart(launcher: str, fresh: bool) -> list[list[str]]:
    """Two ranks whose first attempt fails after its first step (`fresh`: its node's cache emptied first, with a
    compile folder of its own for the job)."""
    kept = ["--compile-cache-dir", tempfile.mkdtemp(prefix="bench-kept-")] if fresh else []
    standalone = ["--standalone"] if launcher == "torchrun" else []
    return [one_node(launcher, 2, None, *standalone, "--max-restarts", "1", *kept)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="run only the scenarios whose name holds one of these texts "
                        "(comma-separated)")
    arguments = parser.parse_args()
    repeats = arguments.repeats
    kept = tempfile.mkdtemp(prefix="bench-kept-")  # the folder a first job filled, for the next jobs
    home = {"XDG_CONFIG_HOME": tempfile.mkdtemp(prefix="bench-home-")}
    secret = {"ACCEL_COMPILE_CACHE_SECRET": SECRET}
    share = {"TORCHINDUCTOR_COMPILE_THREADS": str(max(1, len(os.sched_getaffinity(0)) // 2))}
    cases: dict[str, Callable[[], tuple[list[list[str]], int, dict[str, str]]]] = {
        "cold, 1 rank, accel-launch": lambda: ([one_node("accel", 1, None)], 1, {}),
        "cold, 2 ranks, by hand": lambda: (by_hand(2), 1, {}),
        "cold, 2 ranks, torchrun": lambda: ([one_node("torchrun", 2, None)], 1, {}),
        "cold, 2 ranks, accel-launch --compile-cache off": lambda: ([one_node("accel", 2, "off")], 1, {}),
        "cold, 2 ranks, accel-launch (job)": lambda: ([one_node("accel", 2, None)], 1, {}),
        "cold, 2 ranks, accel-launch (job), compile threads a rank's share": lambda: (
            [one_node("accel", 2, None)], 1, share),
        "cold, 2 nodes x 1 rank, own caches, off": lambda: (two_nodes("off"), 2, secret),
        "cold, 2 nodes x 1 rank, own caches, job": lambda: (two_nodes("job"), 2, secret),
        "cold, 2 nodes x 1 rank, own caches, job, no secret, one home": lambda: (two_nodes("job"), 2, home),
        "next job, 2 nodes x 1 rank, fresh caches, compile folder": lambda: (
            two_nodes("job", "--compile-cache-dir", kept), 2, home),
        "restart, 2 ranks, same node, torchrun": lambda: (restart("torchrun", False), 1, {
            "FAIL_FIRST_ATTEMPT": "1", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),  # else its restart hangs
        "restart, 2 ranks, same node, accel-launch": lambda: (restart("accel", False), 1, {"FAIL_FIRST_ATTEMPT": "1"}),
        "restart, 2 ranks, fresh node, accel-launch, compile folder": lambda: (
            restart("accel", True), 1, {"FAIL_FIRST_ATTEMPT": "fresh"}),
    }
    warm = {"warm, 1 rank, accel-launch": ("accel", 1), "warm, 2 ranks, torchrun": ("torchrun", 2),
            "warm, 2 ranks, accel-launch (job)": ("accel", 2)}
    only = arguments.only.split(",")
    cases = {name: case for name, case in cases.items() if any(text in name for text in only)}
    warm = {name: case for name, case in warm.items() if any(text in name for text in only)}
    samples: dict[str, list[tuple[float, list[float], int]]] = {name: [] for name in [*cases, *warm]}
    warm_cache = tempfile.mkdtemp(prefix="bench-warm-")
    run([one_node("accel", 2, "off")], [warm_cache], {})  # fills the warm cache
    run([one_node("accel", 2, None, "--compile-cache-dir", kept)], [tempfile.mkdtemp(prefix="bench-cold-")], {})
    for _ in range(repeats):
        for name, case in cases.items():
            commands, nodes, extra = case()
            caches = [tempfile.mkdtemp(prefix="bench-cold-")] * len(commands) if nodes == 1 else \
                [tempfile.mkdtemp(prefix="bench-cold-") for _ in range(nodes)]
            samples[name].append(run(commands, caches, extra))
        for name, (launcher, ranks) in warm.items():
            samples[name].append(run([one_node(launcher, ranks, None)], [warm_cache], {}))
    base_runs = samples.get("cold, 1 rank, accel-launch")
    base = statistics.median(sample[0] for sample in base_runs) if base_runs else None
    print(f"| scenario | first step, s (median of {repeats}) | x 1 rank cold | job CPU, s "
          "| CPU per command, s (least first) | misses, summed |")
    print("|---|---|---|---|---|---|")
    for name, runs in samples.items():
        seconds = statistics.median(sample[0] for sample in runs)
        cpu = statistics.median(sum(sample[1]) for sample in runs)
        each = " / ".join(f"{statistics.median(sorted(sample[1])[index] for sample in runs):.1f}"
                          for index in range(len(runs[0][1])))
        misses = statistics.median(sample[2] for sample in runs)
        ratio = f"{seconds / base:.2f}" if base else "-"
        print(f"| {name} | {seconds:.2f} | {ratio} | {cpu:.1f} | {each} | {misses:g} |")


if __name__ == "__main__":
    main()
