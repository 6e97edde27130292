"""Time to the user's first line and whole-job cost: direct ranks, torchrun and accel-launch side by side.

Run by hand, never in CI:

    .venv/bin/python bench/bench_first_line.py                       # 3 scenarios x 1, 2, 4, 8 ranks, 3 runs
    .venv/bin/python bench/bench_first_line.py --ranks 2,8 --runs 5 --no-write

`direct` is the floor: the ranks started by hand with the env:// variables set, no launcher at all.
accel-launch runs twice: on its direct path (one node: the launcher starts the ranks, torch-free) and with
`ACCEL_LAUNCH_PATH=engine` (torch elastic's agent, as torchrun). Each run stamps, in every rank, the wall-clock time of its first line and of its end (scripts/first_line.py).
Per run: wall (start to the last process's exit), CPU of the whole job (user+sys of every process, from the
children's rusage), launch to rank 0's first line, launch to the last rank's first line, and the last rank's
end to the launcher's exit, and the launcher's own peak RSS (VmHWM of the launcher process alone, not its
ranks, read by a thread while it runs). Contenders are interleaved; medians are written to RESULTS-first-line.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from measure import BIN, check_status, free_port, interleave, machine, watch_peak_rss

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "scripts" / "first_line.py"
ENV = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "TORCH"))}
SCENARIOS = {
    "a: import torch, gloo all_reduce": [],
    "b: a + torch.compile, called once": ["--compile"],
    "c: a + import torch._dynamo first": ["--import-dynamo"],
}
METRICS = ("wall s", "CPU s", "first line rank 0 s", "first line last rank s", "last end to exit s",
           "launcher peak RSS MiB")
CONTENDERS = ("direct", "torchrun", "accel-launch", "accel-launch engine")


def launch(contender: str, ranks: int, args: Sequence[str], stamps: Path) -> tuple[float, float, float, float]:
    """Start the job, wait for every process: its wall-clock start and end, the CPU seconds it used, and the
    launcher's peak RSS in MiB (0 for `direct`, which has no launcher)."""
    env = {**ENV, "BENCH_STAMPS": str(stamps)}
    program = [str(SCRIPT), *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, peak = time.time(), 0.0
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
        if contender == "accel-launch engine":
            env["ACCEL_LAUNCH_PATH"] = "engine"
        with tempfile.TemporaryFile("w+") as errors_file:
            process = subprocess.Popen([*launcher, "--nproc-per-node", str(ranks), *program], env=env,
                                       stdout=subprocess.DEVNULL, stderr=errors_file, text=True)
            peaks = watch_peak_rss(process.pid)
            status = process.wait()
            peak = max(peaks, default=0) / 1024
            errors_file.seek(0)
            errors = errors_file.read()
    end = time.time()
    check_status([contender, *program], status, 0, errors)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return start, end, cpu, peak


def measure(contender: str, ranks: int, args: Sequence[str]) -> dict[str, float]:
    stamps = Path(tempfile.mkdtemp(prefix="stamps-"))
    try:
        start, end, cpu, peak = launch(contender, ranks, args, stamps)
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
        "launcher peak RSS MiB": peak,
    }


def rows(scenario: str, ranks: int, samples: dict[str, list[dict[str, float]]], verdicts: list[str]) -> list[str]:
    lines = []
    for metric in METRICS:
        medians = {name: statistics.median(run[metric] for run in runs) for name, runs in samples.items()}
        verdicts.extend(targets(scenario, ranks, metric, medians))
        ours = medians["accel-launch"]
        cells = " | ".join(f"{medians[name]:.2f}" if medians[name] > 0.001 else "-" for name in CONTENDERS)
        ratios = " | ".join(f"{ours / medians[name]:.2f}" if medians[name] > 0.001 else "-"
                            for name in ("torchrun", "direct", "accel-launch engine"))
        lines.append(f"| {scenario} | {ranks} | {metric} | {cells} | {ratios} |")
    return lines


def targets(scenario: str, ranks: int, metric: str, medians: dict[str, float]) -> list[str]:
    """Issue 22's targets that this row measures, each with its figure and PASS or MISS."""
    ours, where = medians["accel-launch"], f"{scenario}, {ranks} ranks"
    if metric == "first line rank 0 s" and scenario.startswith("a") and ranks == 2:
        ratio = ours / medians["torchrun"]
        return [f"- {'PASS' if ratio <= 0.25 else 'MISS'}: launch to the first line, {where}: "
                f"{ours:.2f} s, {ratio:.2f} x torchrun's <= 0.25"]
    if metric == "wall s" and scenario.startswith("a") and ranks == 2:
        ratio = ours / medians["direct"]
        return [f"- {'PASS' if ratio <= 1.15 else 'MISS'}: whole job, {where}: {ours:.2f} s, {ratio:.2f} x direct "
                "ranks' <= 1.15"]
    if metric == "launcher peak RSS MiB":
        return [f"- {'PASS' if ours <= 60 else 'MISS'}: launcher peak RSS, {where}: {ours:.1f} MiB <= 60"]
    return []


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


def load(before: tuple[float, float, float]) -> str:
    """The machine's load averages (1, 5, 15 min) before and after the run: other work shares the cores."""
    after = os.getloadavg()
    return (f"load average before the run {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
            f"after it {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2,4,8", help="comma-separated rank counts")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per contender, after one warm-up")
    parser.add_argument("--only", default="", help="scenario letters to run, e.g. 'a,c'")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--note", action="append", default=[], help="a line for the file's list (e.g. the load)")
    options = parser.parse_args()
    letters = set(filter(None, options.only.split(",")))
    load_before = os.getloadavg()
    verdicts: list[str] = []
    table = ["| scenario | ranks | metric | direct | torchrun | accel-launch | accel-launch engine | accel/torchrun "
             "| accel/direct | accel/engine |", "|---|---|---|---|---|---|---|---|---|---|"]
    for scenario, args in SCENARIOS.items():
        if letters and scenario[0] not in letters:
            continue
        for ranks in map(int, options.ranks.split(",")):
            jobs = {name: (lambda name=name: measure(name, ranks, args)) for name in CONTENDERS}
            table.extend(rows(scenario, ranks, interleave(jobs, options.runs), verdicts))
            print("\n".join(table[-len(METRICS):]), flush=True)
    table.extend(bootstrap_cost(max(options.runs, 5)))
    facts = [*machine(), *options.note, load(load_before)]
    text = "\n".join(["# Time to the user's first line", "",
                      f"Written by `bench/bench_first_line.py`; medians of {options.runs} runs after a warm-up, "
                      "contenders interleaved.", "", *(f"- {line}" for line in facts), "", *table, "",
                      "## Targets (issue 22)", "", *verdicts, ""])
    if not options.no_write:
        (HERE / "RESULTS-first-line.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
