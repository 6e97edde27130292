"""accel-launch against torchrun, side by side on the same machine, scripts and rank counts (issue 5).

Run by hand, never in CI (pytest collects only tests/):

    /work/venv/bin/python bench/bench_launch.py            # everything, 5 runs each after a warm-up
    /work/venv/bin/python bench/bench_launch.py --only fail-fast,teardown --runs 7 --no-write

Contenders run interleaved (accel-launch, torchrun, accel-launch, ...). The table is printed and, unless
--no-write, written to bench/RESULTS.md with the machine described. accel-launch uses the user's backend
cache; the warm-up fills it, and one extra row shows the fail-fast time with the cache turned off.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from measure import BIN, Row, check_status, interleave, machine, peak_rss_mib, run, table

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
ACCEL = [str(BIN / "accel-launch")]
TORCHRUN = [str(BIN / "torchrun"), "--standalone"]
ENV = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "TORCH_"))}
WORK = Path(tempfile.mkdtemp(prefix="bench-launch-"))
RANK_COUNTS = [1, 2, 4, 8]


def fail_fast(runs: int) -> list[Row]:
    """An unsupported backend, 4 ranks: accel-launch refuses before any rank; torchrun's ranks each fail."""
    accel = [*ACCEL, "--compile-backend", "bogus", "--nproc-per-node", "4", str(SCRIPTS / "noop.py")]
    torchrun = [*TORCHRUN, "--nproc-per-node", "4", str(SCRIPTS / "compile_bogus.py")]
    samples = interleave(
        {"accel": lambda: run(accel, ENV, WORK, expect=2), "torchrun": lambda: run(torchrun, ENV, WORK, expect=1)},
        runs,
    )
    uncached = {**ENV, "ACCEL_LAUNCH_NO_CACHE": "1"}
    cold = interleave({"accel": lambda: run(accel, uncached, WORK, expect=2)}, max(3, runs // 2), warmup=0)
    return [
        Row("fail-fast, bogus backend, 4 ranks", "s", samples["accel"], samples["torchrun"]),
        Row("fail-fast, cache off (ACCEL_LAUNCH_NO_CACHE=1)", "s", cold["accel"], samples["torchrun"]),
    ]


def overhead(runs: int) -> list[Row]:
    """Every rank imports torch and torch._dynamo and exits: the cost of launching and validating."""
    rows = []
    script = str(SCRIPTS / "import_torch.py")
    for ranks in RANK_COUNTS:
        flags = ["--nproc-per-node", str(ranks), script]
        samples = interleave(
            {"accel": lambda: run([*ACCEL, *flags], ENV, WORK), "torchrun": lambda: run([*TORCHRUN, *flags], ENV, WORK)},
            runs,
        )
        rows.append(Row(f"launch overhead, {ranks} rank{'s' if ranks > 1 else ''}", "s",
                        samples["accel"], samples["torchrun"]))
    return rows


def teardown(runs: int) -> list[Row]:
    """One of 4 ranks exits 1 after all started: seconds from its exit to the launcher's own exit. 0.3 s of it is
    the window in which ranks failing alike end by themselves (docs/CONTRACT.md; strace: the launcher reaps the rank
    at once, waits the window, then stops the others in about 15 ms)."""
    script = str(SCRIPTS / "teardown.py")

    def measure(launcher: list[str]) -> Callable[[], float]:
        def once() -> float:
            stamps = Path(tempfile.mkdtemp(dir=WORK))
            done = subprocess.run([*launcher, "--nproc-per-node", "4", script], env={**ENV, "STAMP_DIR": str(stamps)},
                                  cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
            ended = time.time()
            check_status(launcher, done.returncode, 1, done.stderr)
            return ended - float((stamps / "exit").read_text())

        return once

    samples = interleave({"accel": measure(ACCEL), "torchrun": measure(TORCHRUN)}, runs)
    return [Row("teardown, 1 of 4 ranks exits 1", "s", samples["accel"], samples["torchrun"])]


def rank_output(runs: int) -> list[Row]:
    """One rank writes 200 MB of lines, stdout to /dev/null: accel-launch, torchrun, and the script run bare."""
    script = str(SCRIPTS / "output.py")
    flags = ["--nproc-per-node", "1", script]
    samples = interleave(
        {
            "accel": lambda: run([*ACCEL, *flags], ENV, WORK),
            "torchrun": lambda: run([*TORCHRUN, *flags], ENV, WORK),
            "bare": lambda: run([sys.executable, script], ENV, WORK),
        },
        runs,
    )
    return [
        Row("rank output, 200 MB to stdout, 1 rank", "s", samples["accel"], samples["torchrun"]),
        Row("rank output, 200 MB to stdout, 1 rank", "s", samples["accel"], samples["bare"], "bare script"),
    ]


def memory(runs: int) -> list[Row]:
    """The launcher process's own peak RSS while 4 ranks import torch and torch._dynamo."""
    flags = ["--nproc-per-node", "4", str(SCRIPTS / "import_torch.py")]
    samples = interleave(
        {"accel": lambda: peak_rss_mib([*ACCEL, *flags], ENV, WORK),
         "torchrun": lambda: peak_rss_mib([*TORCHRUN, *flags], ENV, WORK)},
        runs,
    )
    return [Row("launcher peak RSS, 4 ranks", "MiB", samples["accel"], samples["torchrun"])]


def accelerator_api(runs: int) -> list[Row]:
    """The accelerator API in microseconds (timeit in a fresh process per run; no torchrun counterpart)."""
    results = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, str(SCRIPTS / "api_timing.py")], env=ENV, cwd=WORK,
                              capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout))
    return [Row(f"API: {name}", "us", [r[name] for r in results], None) for name in results[0]]


SCENARIOS: dict[str, Callable[[int], list[Row]]] = {
    "fail-fast": fail_fast,
    "overhead": overhead,
    "teardown": teardown,
    "output": rank_output,
    "memory": memory,
    "api": accelerator_api,
}


def targets(rows: list[Row]) -> list[str]:
    """Each issue-5 target with its figure and PASS/MISS, for the rows that were measured."""
    verdicts = []
    for row in rows:
        accel = statistics.median(row.accel)
        ratio = row.ratio
        if row.scenario.startswith("fail-fast, bogus"):
            ok = accel < 0.5 and ratio is not None and ratio <= 0.2
            verdicts.append(_verdict(ok, f"fail-fast {accel:.2f} s < 0.5 s and ratio {ratio:.2f} <= 0.2"))
            verdicts.append(_verdict(accel < 0.3, f"fail-fast {accel:.2f} s < 0.3 s (issue 22)"))
        elif row.scenario.startswith("launch overhead"):
            verdicts.append(_verdict(ratio <= 1.05, f"{row.scenario}: ratio {ratio:.2f} <= 1.05"))
        elif row.scenario.startswith("teardown"):
            ok = accel < 1.0 and ratio <= 1.0
            verdicts.append(_verdict(ok, f"teardown {accel:.2f} s < 1 s and ratio {ratio:.2f} <= 1.0"))
        elif row.scenario.startswith("launcher peak RSS"):
            verdicts.append(_verdict(accel <= 60, f"{row.scenario}: {accel:.1f} MiB <= 60 (issue 22)"))
        elif row.scenario.startswith("rank output") and row.other_name == "bare script":
            verdicts.append(_verdict(ratio <= 1.2, f"rank output: accel-launch / bare {ratio:.2f} <= 1.2"))
    return verdicts


def _verdict(ok: bool, text: str) -> str:
    return f"- {'PASS' if ok else 'MISS'}: {text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Measured runs per contender, after one warm-up.")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"Comma-separated, from: {', '.join(SCENARIOS)}.")
    parser.add_argument("--ranks", default="1,2,4,8", help="Rank counts for the launch-overhead scenario.")
    parser.add_argument("--no-write", action="store_true", help="Print only; leave bench/RESULTS.md as it is.")
    parser.add_argument("--note", action="append", default=[], help="A line for the file's list (e.g. the load).")
    args = parser.parse_args()
    RANK_COUNTS[:] = [int(count) for count in args.ranks.split(",")]
    rows: list[Row] = []
    for name in args.only.split(","):
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.extend(SCENARIOS[name](args.runs))
    report = "\n".join([
        "# accel-launch against torchrun", "",
        "Written by `bench/bench_launch.py` (run by hand). Medians and min-max of "
        f"{args.runs} runs per contender after a warm-up, contenders interleaved.", "",
        *(f"- {fact}" for fact in [*machine(), *args.note]), "",
        table(rows), "", "## Targets (issues 5 and 22)", "", *targets(rows), "",
    ])
    print(report)
    if not args.no_write:
        (HERE / "RESULTS.md").write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
