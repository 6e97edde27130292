"""What the watch costs a training job (docs/CONTRACT.md section 9): steps per second of a small DDP job on gloo
under accel-launch, with the rank's progress hook and without it, in blocks of 50 steps that alternate within each
launch (the hook taken out of torch's global hooks and put back, at the same steps in every rank: the same load
for both), medians and their ratio; and the hook's own cost a step, and one look of the launcher at a rank's
file, timed in this process. Run by hand: `python bench/bench_watch.py [--repeats N] [--ranks N]`;
bench/RESULTS-watch.md holds a run's table."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = str(ROOT / "bench" / "scripts" / "watch_steps.py")


def block_rates(ranks: int, width: str, blocks: int) -> dict[str, list[float]]:
    """One launch: each block's steps per second, with the hook (`on`) and without (`off`), blocks alternating."""
    env = {**os.environ, "BENCH_WIDTH": width, "BENCH_BLOCKS": str(blocks)}
    done = subprocess.run([sys.executable, "-m", "launcher", "--nproc-per-node", str(ranks), STEPS], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the launch failed ({done.returncode}): {done.stderr[-2000:]}")
    rates: dict[str, list[float]] = {"on": [], "off": []}
    for line in done.stdout.splitlines():
        kind, _, rate = line.partition(" ")
        if kind in rates:
            rates[kind].append(float(rate))
    return rates


def hook_microseconds(count: int = 20000) -> tuple[float, float]:
    """The rank's hook a step, and the launcher's read of one rank's file, in microseconds each."""
    from launcher.rank.progress import _Progress
    from launcher.run.watch.progress_file import read_progress

    with tempfile.TemporaryDirectory() as folder:
        record = _Progress(os.open(Path(folder) / "rank-0.progress", os.O_RDWR | os.O_CREAT, 0o600))
        started = time.perf_counter()
        for _ in range(count):
            record.stepped(None, (), {})
        hook = (time.perf_counter() - started) / count * 1e6
        started = time.perf_counter()
        for _ in range(count // 10):
            read_progress(Path(folder), 0).busy_seconds()
        look = (time.perf_counter() - started) / (count // 10) * 1e6
    return hook, look


def hook_in_a_step(width: int = 256, blocks: int = 400) -> tuple[float, float]:
    """Microseconds a step of a one-thread MLP (no DDP, the smallest steps) without and with the rank's hook, in
    blocks of 50 steps, off, on, on, off: what the hook costs right after a real step, where its clock reads and
    writes run with the caches the step left (several times its cost in a loop of its own)."""
    import torch

    from launcher.rank.progress import _Progress

    optimizer_module = sys.modules["torch.optim.optimizer"]
    hooks = optimizer_module._global_optimizer_post_hooks  # this comparison only: torch's private dict
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(64, width)
    with tempfile.TemporaryDirectory() as folder:
        record = _Progress(os.open(Path(folder) / "rank-0.progress", os.O_RDWR | os.O_CREAT, 0o600))
        record.register(optimizer_module)
        ours = dict(hooks)
        times: dict[bool, list[float]] = {False: [], True: []}
        for number in range(blocks):
            on = number % 4 in (1, 2)
            hooks.clear()
            hooks.update(ours if on else {})
            started = time.perf_counter()
            for _ in range(50):
                optimizer.zero_grad()
                model(batch).pow(2).mean().backward()
                optimizer.step()
            times[on].append((time.perf_counter() - started) / 50 * 1e6)
        hooks.clear()
    return statistics.median(times[False]), statistics.median(times[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=40)
    args = parser.parse_args()
    hook, look = hook_microseconds()
    print(f"hook a step: {hook:.2f} us; the launcher's read of one rank's file: {look:.1f} us")
    off, on = hook_in_a_step()
    print(f"a one-thread MLP step (width 256): {off:.1f} us without the hook, {on:.1f} us with it: "
          f"{on - off:.1f} us, {(on - off) / off * 100:.2f} %")
    print("| job | steps/s without the hook | with it | ratio of medians | median of neighbour ratios | blocks |")
    print("|---|---|---|---|---|---|")
    for width in ("64", "256"):
        rates: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(args.repeats):
            found = block_rates(args.ranks, width, args.blocks)
            for kind in rates:
                rates[kind] += found[kind]
        on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
        pairs = statistics.median(a / b for a, b in zip(rates["on"], rates["off"]))
        print(f"| DDP gloo, width {width}, {args.ranks} ranks | {off:.1f} | {on:.1f} | {on / off:.4f} | "
              f"{pairs:.4f} | {len(rates['on'])} + {len(rates['off'])} of 50 steps |")

if __name__ == "__main__":
    main()
