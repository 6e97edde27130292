"""What grows with the node count: the backend agreement, torch's c10d rendezvous, the hostfile, the head's
fan-out, and node launchers on loopback against torchrun. Run by hand, never in CI:

    .venv/bin/python bench/bench_scale.py                       # about 10 minutes on 2 quiet cores
    .venv/bin/python bench/bench_scale.py --only agreement,hostfile --no-write
    .venv/bin/python bench/bench_scale.py --runs 1 --loopback 2,4   # fewer repeats, fewer sizes

The table is printed and, unless --no-write, written to bench/RESULTS-scale.md with the machine and its
load (other work on the machine shows in every wall time here).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the agreement's simulation lives in the tests
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # before torch: its store clients warn per connect

import scale_cases  # noqa: E402  (after the path and the log level)
from measure import machine, table  # noqa: E402

READING = HERE / "SCALE-READING.md"  # what the curves say: kept apart, so that a rerun keeps it
SECTIONS = ("torch-rdzv", "agreement", "hostfile", "fan-out", "loopback")  # torch first: 4,096 threads linger


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    return "\n".join(lines)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def sizes(text: str) -> list[int]:
    return [int(size) for size in text.split(",") if size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"Comma-separated, from: {', '.join(SECTIONS)}.")
    parser.add_argument("--agreement", default="64,256,1024,4096", help="Simulated node counts for the agreement.")
    parser.add_argument("--torch-rdzv", default="8,32,64,128", help="Simulated node counts for torch's c10d rendezvous.")
    parser.add_argument("--hostfile", default="1000,10000,65536", help="Hostfile line counts.")
    parser.add_argument("--fan-out", type=int, default=1000, help="Hosts for the head's fan-out.")
    parser.add_argument("--loopback", default="2,4,8,16", help="Node launcher counts on loopback.")
    parser.add_argument("--runs", type=int, default=2, help="Runs per contender on loopback (interleaved).")
    parser.add_argument("--timeout", type=float, default=60, help="Seconds before one hostfile or rendezvous "
                        "measurement is stopped and shown as a lower bound.")
    parser.add_argument("--no-write", action="store_true", help="Print only; leave bench/RESULTS-scale.md as it is.")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two sockets per simulated node in this process

    sections: dict[str, Callable[[], str]] = {
        "agreement": lambda: "## The backend agreement (threads as nodes, one TCPStore client each)\n\n" + markdown(
            ["nodes", "connect s", "calls/node max (agree)", "calls/node mean", "agree s", "calls/node max (one "
             "differs)", "refuse s", "nodes stopped"], scale_cases.agreement(sizes(args.agreement))),
        "torch-rdzv": lambda: "## torch's c10d rendezvous (threads as nodes, DynamicRendezvousHandler)\n\n" + markdown(
            ["nodes", "rendezvous s", "completed"], scale_cases.torch_rendezvous(sizes(args.torch_rdzv), args.timeout)),
        "hostfile": lambda: "## Hostfile read + selection, and a whole --dry-run\n\n" + markdown(
            ["lines", "parse_hostfile + select_nodes s", "accel-launch --hostfile --dry-run s"],
            scale_cases.hostfile(sizes(args.hostfile), args.timeout)),
        "fan-out": lambda: "## The head's fan-out (ssh is a stand-in that sleeps 20 s, then exits 0)\n\n" + markdown(
            ["hosts", "exit", "all started s", "children", "head fds", "head RSS MiB", "children RSS MiB",
             "head CPU s", "wall s"], scale_cases.fan_out(args.fan_out, 20)),
        "loopback": lambda: "## Node launchers on loopback c10d against torchrun (1 rank each, import torch)\n\n"
                            + table(scale_cases.loopback(sizes(args.loopback), args.runs)),
    }
    parts = []
    for name in args.only.split(","):
        print(f"running {name} ({load()}) ...", file=sys.stderr, flush=True)
        before = load()
        parts.append(f"{sections[name]()}\n\nLoad before: {before}; after: {load()}.")
        print(parts[-1], flush=True)
    report = "\n".join([
        "# What grows with the node count", "",
        "Written by `bench/bench_scale.py` (run by hand). The load averages count this bench's own threads "
        "and processes (4,096 simulated nodes are 4,096 threads) as well as other work on the machine.", "",
        *(f"- {fact}" for fact in machine()), "", *(f"{part}\n" for part in parts),
        READING.read_text(encoding="utf-8"),
    ])
    if not args.no_write:
        (HERE / "RESULTS-scale.md").write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
