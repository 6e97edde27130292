"""Time to the user's first line and whole-job cost: direct ranks, torchrun and accel-launch side by side.

Run by hand, never in CI:

    .venv/bin/python bench/bench_first_line.py                       # 3 scenarios x 1, 2, 4, 8 ranks, 3 runs
    .venv/bin/python bench/bench_first_line.py --ranks 2,8 --runs 5 --no-write

`direct` is the floor: the ranks started by hand with the env:// variables set, no launcher at all.
Each run stamps, in every rank, the wall-clock time of its first line and of its end (scripts/first_line.py).
Per run: wall (start to the last process's exit), CPU of the whole job (user+sys of every process, from the
children's rusage), launch to rank 0's first line, launch to the last rank's first line, and the last rank's
end to the launcher's exit. Contenders are interleaved; medians are written to RESULTS-first-line.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from measure import BIN, check_status, machine

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "scripts" / "first_line.py"
ENV = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "TORCH"))}
SCENARIOS = {
    "a: import torch, gloo all_reduce": [],
    "b: a + torch.compile, called once": ["--compile"],
    "c: a + import torch._dynamo first": ["--import-dynamo"],
}
METRICS = ("wall s", "CPU s", "first line rank 0 s", "first line last rank s", "last end to exit s")
CONTENDERS = ("direct", "torchrun", "accel-launch")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(contender: str, ranks: int, args: Sequence[str], stamps: Path) -> tuple[float, float, float]:
    """Start the job, wait for every process: its wall-clock start and end, and the CPU seconds it used."""
    env = {**ENV, "BENCH_STAMPS": str(stamps)}
    program = [str(SCRIPT), *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    if contender == "direct":
        shared = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(ranks),
                  "LOCAL_WORLD_SIZE": str(ranks), "GROUP_RANK": "0"}
        processes = [subprocess.Popen([str(BIN / "python"), *program], env={**shared, "RANK": str(rank),
                                      "LOCAL_RANK": str(rank)}, stdout=subprocess.DEVNULL) for rank in range(ranks)]
        status, errors = max(process.wait() for process in processes), ""
    else:
        # accel-launch resolves eager, the backend the other contenders' ranks set themselves (scripts/first_line.py)
        launcher = ([str(BIN / "torchrun"), "--standalone"] if contender == "torchrun"
                    else [str(BIN / "accel-launch"), "--compile-backend", "eager"])
        done = subprocess.run([*launcher, "--nproc-per-node", str(ranks), *program], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        status, errors = done.returncode, done.stderr
    end = time.time()
    check_status([contender, *program], status, 0, errors)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return start, end, cpu


def measure(contender: str, ranks: int, args: Sequence[str]) -> dict[str, float]:
    stamps = Path(tempfile.mkdtemp(prefix="stamps-"))
    try:
        start, end, cpu = launch(contender, ranks, args, stamps)
        first = [float((stamps / f"first-{rank}").read_text()) for rank in range(ranks)]
        ends = [float((stamps / f"end-{rank}").read_text()) for rank in range(ranks)]
    finally:
        shutil.rmtree(stamps, ignore_errors=True)
    return {
        "wall s": end - start,
        "CPU s": cpu,
        "first line rank 0 s": first[0] - start,
        "first line last rank s": max(first) - start,
        "last end to exit s": end - max(ends),
    }


def interleaved(jobs: dict[str, Callable[[], dict[str, float]]], runs: int) -> dict[str, list[dict[str, float]]]:
    """One warm-up round, then `runs` rounds, each contender in turn."""
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in jobs}
    for round_number in range(runs + 1):
        for name, job in jobs.items():
            result = job()
            if round_number:
                samples[name].append(result)
    return samples


def rows(scenario: str, ranks: int, samples: dict[str, list[dict[str, float]]]) -> list[str]:
    lines = []
    for metric in METRICS:
        medians = {name: statistics.median(run[metric] for run in runs) for name, runs in samples.items()}
        ours = medians["accel-launch"]
        ratio_torchrun = f"{ours / medians['torchrun']:.2f}" if medians["torchrun"] > 0.001 else "-"
        ratio_direct = f"{ours / medians['direct']:.2f}" if medians["direct"] > 0.001 else "-"
        cells = " | ".join(f"{medians[name]:.2f}" for name in CONTENDERS)
        lines.append(f"| {scenario} | {ranks} | {metric} | {cells} | {ratio_torchrun} | {ratio_direct} |")
    return lines


def bootstrap_cost(runs: int) -> list[str]:
    """One rank's program alone, `python s.py` against `python -P -m launcher.rank.bootstrap script s.py`, where
    s.py only imports torch: what the bootstrap adds to every rank (median wall seconds)."""
    script = HERE / "scripts" / "import_torch_only.py"
    env = {**ENV, "ACCEL_COMPILE_BACKEND": "inductor", "ACCEL_COMPILE_BACKEND_SOURCE": "accelerator default",
           "ACCEL_ACCELERATOR": "cpu", "RANK": "0"}
    commands = {"bare": [str(BIN / "python"), str(script)],
                "bootstrap": [str(BIN / "python"), "-P", "-m", "launcher.rank.bootstrap", "script", str(script)]}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(runs + 1):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, env=env, check=True)
            if round_number:
                samples[name].append(time.perf_counter() - start)
    bare, ours = (statistics.median(samples[name]) for name in commands)
    return ["", "| one rank, s.py = `import torch` | python s.py | bootstrap + s.py | ratio | added |",
            "|---|---|---|---|---|", f"| wall s | {bare:.2f} | {ours:.2f} | {ours / bare:.2f} | {ours - bare:+.2f} s |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2,4,8", help="comma-separated rank counts")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per contender, after one warm-up")
    parser.add_argument("--only", default="", help="scenario letters to run, e.g. 'a,c'")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    options = parser.parse_args()
    letters = set(filter(None, options.only.split(",")))
    table = ["| scenario | ranks | metric | direct | torchrun | accel-launch | accel/torchrun | accel/direct |",
             "|---|---|---|---|---|---|---|---|"]
    for scenario, args in SCENARIOS.items():
        if letters and scenario[0] not in letters:
            continue
        for ranks in map(int, options.ranks.split(",")):
            jobs = {name: (lambda name=name: measure(name, ranks, args)) for name in CONTENDERS}
            table.extend(rows(scenario, ranks, interleaved(jobs, options.runs)))
            print("\n".join(table[-len(METRICS):]), flush=True)
    table.extend(bootstrap_cost(max(options.runs, 5)))
    text = "\n".join(["# Time to the user's first line", "",
                      f"Written by `bench/bench_first_line.py`; medians of {options.runs} runs after a warm-up, "
                      "contenders interleaved.", "", *(f"- {line}" for line in machine()), "", *table, ""])
    if not options.no_write:
        (HERE / "RESULTS-first-line.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
