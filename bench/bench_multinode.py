"""Several node launchers, one rank each: ranks started by hand, torchrun and accel-launch side by side.

Run by hand, never in CI:

    .venv/bin/python bench/bench_multinode.py                               # about 13 minutes on 2 cores
    .venv/bin/python bench/bench_multinode.py --hosts-over-4 pack           # 8 nodes on the hosts too, 2 each
    .venv/bin/python bench/bench_multinode.py --nodes 2 --where loopback --c10d '' --runs 1 --no-write
    .venv/bin/python bench/bench_multinode.py --where hosts --nodes '' --c10d '' --hostfile 2,4 --no-write

For each place (loopback: every node launcher on 127.0.0.1; hosts: the four namespace hosts of
tests/multinode/hosts/hosts.py, made here when this machine can, root and `ip netns`, removed at the end),
each node count and each form, the contenders run interleaved, one warm-up then `--runs` runs:
- `by hand`: the ranks started with the env:// variables set, no launcher at all (the floor);
- `torchrun` and `accel-launch`, one launcher per node, in the static form (`--nnodes N --node-rank R
  --master-addr A --master-port P --nproc-per-node 1`) or the c10d form without node rank (`--rdzv-backend
  c10d --rdzv-endpoint A:P`); on the hosts, also the hostfile form: accel-launch's head on hosta (`--hostfile`,
  one `slots=1` line per node) starts every node launcher over ssh, its cost included; torchrun and the ranks
  by hand start there as in the static form, each on its host directly (torchrun has no hostfile of its own).
Every rank runs scripts/first_line.py, which stamps the wall-clock time of its first line and of its end.
Per run: launch to rank 0's and to the last rank's first line, the whole job's wall (launch to the last
process's exit), the last rank's end to that exit, and each node launcher's peak RSS (VmHWM of the launcher
process alone, not its ranks): node 0's, and the largest of the other nodes' (not for accel-launch's hostfile
form, whose node launchers are sshd's children on their hosts: "-"). Medians, with the ratios of
accel-launch to torchrun and to the floor, go to RESULTS-multinode.md. The bench measures whatever the
accel-launch it runs does; the launch path it takes for each form (its `--dry-run`) is written with the results.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench_first_line import ENV, SCRIPT
from measure import BIN, interleave, machine, watch_peak_rss
from multinode_places import Hosts, Loopback, Place, four_hosts, hosts_possible

HERE = Path(__file__).resolve().parent
CONTENDERS = ("by hand", "torchrun", "accel-launch")
LAUNCHERS = {"torchrun": [str(BIN / "torchrun")],
             # accel-launch resolves eager, the backend the other contenders' ranks set themselves (first_line.py)
             "accel-launch": [str(BIN / "accel-launch"), "--compile-backend", "eager"]}
METRICS = ("first line rank 0 s", "first line last rank s", "wall s", "last end to exit s",
           "node 0 launcher peak RSS MiB", "other node launchers peak RSS MiB (max)")
Job = list[tuple[list[str], dict[str, str]]]  # each process to start: its argv and environment


def form_flags(form: str, nodes: int, node: int, addr: str, port: int) -> list[str]:
    """The launcher flags of one node in `form` (static or c10d), one rank per node."""
    if form == "static":
        return ["--nnodes", str(nodes), "--node-rank", str(node), "--master-addr", addr, "--master-port", str(port),
                "--nproc-per-node", "1"]
    return ["--nnodes", str(nodes), "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
            f"{addr}:{port}", "--rdzv-id", f"bench{nodes}"]


def job(contender: str, form: str, nodes: int, place: Place, stamps: Path) -> Job:
    """Every process the contender starts by hand: one rank per node, or one node launcher per node."""
    port, processes = place.port(), []
    if form == "hostfile" and contender == "accel-launch":
        hostfile = stamps / "hostfile"
        hostfile.write_text("".join(f"{place.node_addr(node)} slots=1\n" for node in range(nodes)))
        argv = [*LAUNCHERS[contender], "--hostfile", str(hostfile), "--master-port", str(port), *place.head_flags(),
                "--export", "BENCH_STAMPS", str(SCRIPT)]
        return [(place.argv(0, argv), {**ENV, "BENCH_STAMPS": str(stamps)})]
    form = "static" if form == "hostfile" else form
    for node in range(nodes):
        env = {**ENV, **place.env(node), "BENCH_STAMPS": str(stamps)}
        if contender == "by hand":
            env.update(MASTER_ADDR=place.master_addr, MASTER_PORT=str(port), WORLD_SIZE=str(nodes), RANK=str(node),
                       LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", GROUP_RANK=str(node))
            argv = [str(BIN / "python"), str(SCRIPT)]
        else:
            argv = [*LAUNCHERS[contender], *form_flags(form, nodes, node, place.master_addr, port), str(SCRIPT)]
        processes.append((place.argv(node, argv), env))
    return processes


def run_job(processes: Job, timeout: float) -> tuple[float, float, list[float]]:
    """Start every process at once and wait for all: the wall-clock start and end, and each one's peak RSS in
    MiB. A process that fails or outlives `timeout` stops the benchmark, its session killed with the rest."""
    start = time.time()
    errors = [tempfile.TemporaryFile("w+") for _ in processes]
    started = [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=error, start_new_session=True)
               for (argv, env), error in zip(processes, errors)]
    peaks = [watch_peak_rss(process.pid) for process in started]
    try:
        statuses = [process.wait(timeout=max(1.0, start + timeout - time.time())) for process in started]
        end = time.time()
        failed = [(index, status) for index, status in enumerate(statuses) if status != 0]
        if failed:
            index, status = failed[0]
            errors[index].seek(0)
            raise RuntimeError(f"{' '.join(processes[index][0])} exited {status}:\n{errors[index].read()[-2000:]}")
    finally:
        for process in started:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its ranks too, when it failed or timed out
            except ProcessLookupError:
                pass
            process.wait()
        for error in errors:
            error.close()
    return start, end, [max(peak, default=0) / 1024 for peak in peaks]


def measure(contender: str, form: str, nodes: int, place: Place, timeout: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="stamps-") as folder:
        stamps = Path(folder)
        start, end, peaks = run_job(job(contender, form, nodes, place, stamps), timeout)
        first = [float((stamps / f"first-{rank}").read_text()) for rank in range(nodes)]
        ends = [float((stamps / f"end-{rank}").read_text()) for rank in range(nodes)]
    launchers = contender != "by hand" and not (form == "hostfile" and contender == "accel-launch")
    return {
        "first line rank 0 s": first[0] - start,
        "first line last rank s": max(first) - start,
        "wall s": end - start,
        "last end to exit s": end - max(ends),
        "node 0 launcher peak RSS MiB": peaks[0] if launchers else 0.0,
        "other node launchers peak RSS MiB (max)": max(peaks[1:]) if launchers else 0.0,
    }


def rows(where: str, form: str, nodes: int, samples: dict[str, list[dict[str, float]]],
         verdicts: list[str]) -> list[str]:
    lines = []
    for metric in METRICS:
        medians = {name: statistics.median(run[metric] for run in runs) for name, runs in samples.items()}
        verdicts.extend(targets(where, form, nodes, metric, medians))
        ours = medians["accel-launch"]
        cells = " | ".join(f"{medians[name]:.2f}" if medians.get(name, 0) > 0.001 else "-" for name in CONTENDERS)
        ratios = " | ".join(f"{ours / medians[name]:.2f}" if min(ours, medians.get(name, 0)) > 0.001 else "-"
                            for name in ("torchrun", "by hand"))
        lines.append(f"| {where} | {form} | {nodes} | {metric} | {cells} | {ratios} |")
    return lines


def targets(where: str, form: str, nodes: int, metric: str, medians: dict[str, float]) -> list[str]:
    """Issue 29's targets that this row measures, each with its figure and PASS or MISS."""
    ours, at = medians["accel-launch"], f"{where}, {form}, {nodes} nodes"
    found = []
    if metric == "first line rank 0 s" and form == "static" and nodes == 2:
        ratio = ours / medians["torchrun"]
        found.append(f"- {'PASS' if ratio <= 0.25 else 'MISS'}: launch to the first line, {at}: {ours:.2f} s, "
                     f"{ratio:.2f} x torchrun's <= 0.25")
    if metric == "wall s" and form == "static" and nodes == 2:
        ratio = ours / medians["by hand"]
        found.append(f"- {'PASS' if ratio <= 1.15 else 'MISS'}: whole job, {at}: {ours:.2f} s, {ratio:.2f} x the "
                     "ranks started by hand <= 1.15")
    if "RSS" in metric and form != "hostfile":
        found.append(f"- {'PASS' if ours <= 60 else 'MISS'}: {metric}, {at}: {ours:.1f} MiB <= 60")
    if where != "loopback" and metric in ("first line last rank s", "wall s"):
        ratio = ours / medians["torchrun"]
        found.append(f"- {'PASS' if ratio <= 1.0 else 'MISS'}: {metric.removesuffix(' s')} on the hosts, {at}: "
                     f"{ours:.2f} s, {ratio:.2f} x torchrun's <= 1.00")
    return found


def launch_paths(place: Place, forms: Sequence[str]) -> list[str]:
    """The launch path accel-launch's `--dry-run` names for node 0 of each form (what the figures measure)."""
    lines = []
    for form in forms:
        with tempfile.TemporaryDirectory(prefix="bench-paths-") as folder:
            flags = form_flags(form, 2, 0, place.master_addr, place.port())
            if form == "hostfile":
                hostfile = Path(folder) / "hostfile"
                hostfile.write_text("".join(f"{place.node_addr(node)} slots=1\n" for node in range(2)))
                flags = ["--hostfile", str(hostfile), "--master-port", str(place.port()), *place.head_flags()]
            argv = [*LAUNCHERS["accel-launch"], "--dry-run", *flags, str(SCRIPT)]
            out = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=120).stdout
        path = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("launch path")]
        lines.append(f"accel-launch's launch path, {form} form: {path[0] if path else 'not said by --dry-run'}")
    return lines


def launcher_measured() -> str:
    """Which accel-launch code ran: the package's folder, the last commit that changed it, and whether it has
    edits not committed."""
    probe = "import launcher, os; print(os.path.dirname(launcher.__file__))"
    where = subprocess.run([str(BIN / "python"), "-c", probe], env=ENV, capture_output=True, text=True,
                           check=True).stdout.strip()
    git = ["git", "-C", where]
    commit = subprocess.run([*git, "log", "-1", "--format=%h %s", "--", "."], capture_output=True, text=True).stdout
    edits = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True, text=True).stdout
    return (f"accel-launch measured: {where}, last changed at {commit.strip() or 'an unknown commit'}"
            + (" (with edits not committed)" if edits.strip() else ""))


def measure_place(place: Place, options: argparse.Namespace, table: list[str], verdicts: list[str],
                  facts: list[str]) -> None:
    groups = [("static", nodes) for nodes in sizes(options.nodes)] + [("c10d", nodes) for nodes in sizes(options.c10d)]
    if isinstance(place, Hosts):
        groups += [("hostfile", nodes) for nodes in sizes(options.hostfile)]
    facts.extend(f"{place.name}: {line}" for line in launch_paths(place, sorted({form for form, _ in groups},
                                                                                  reverse=True)))
    for form, nodes in groups:
        why_not = place.why_not(nodes)
        if why_not:
            facts.append(f"{place.name}: {why_not}")
            continue
        facts.append(f"{place.name}, {form}, {nodes} nodes: {place.placement(nodes)}")
        jobs: dict[str, Callable[[], dict[str, float]]] = {
            name: (lambda name=name: measure(name, form, nodes, place, options.timeout)) for name in CONTENDERS}
        table.extend(rows(place.name, form, nodes, interleave(jobs, options.runs), verdicts))
        print("\n".join(table[-len(METRICS):]), flush=True)


def sizes(text: str) -> list[int]:
    return [int(size) for size in text.split(",") if size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2,4,8", help="node counts in the static form, comma-separated")
    parser.add_argument("--c10d", default="4", help="node counts in the c10d form ('' for none)")
    parser.add_argument("--hostfile", default="2,4", help="node counts in the hostfile form, on the hosts only")
    parser.add_argument("--where", default="loopback,hosts", help="places: loopback, hosts (namespace hosts)")
    parser.add_argument("--hosts-over-4", choices=("pack", "skip"), default="skip",
                        help="more than 4 nodes on the hosts: skip them (keeps a full run near 10 minutes), or "
                        "pack: node i on host i mod 4")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per contender, after one warm-up")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one job may take before the bench stops")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS-multinode.md as it is")
    parser.add_argument("--note", action="append", default=[], help="a line for the file's list (e.g. the load)")
    options = parser.parse_args()
    places = set(filter(None, options.where.split(",")))
    load_before = os.getloadavg()
    table = ["| where | form | nodes | metric | by hand | torchrun | accel-launch | accel/torchrun | accel/by hand |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts: list[str] = []
    facts = [launcher_measured()]
    if "loopback" in places:
        measure_place(Loopback(), options, table, verdicts, facts)
    if "hosts" in places:
        why_not = hosts_possible()
        if why_not:
            facts.append(f"4 hosts: not measured: {why_not}")
        else:
            with tempfile.TemporaryDirectory(prefix="bench-hosts-") as folder, four_hosts(Path(folder)) as cluster:
                measure_place(Hosts(cluster, options.hosts_over_4 == "pack"), options, table, verdicts, facts)
    after = os.getloadavg()
    facts += [*machine(), *options.note,
              f"load average before the run {' '.join(f'{x:.2f}' for x in load_before)}, "
              f"after it {' '.join(f'{x:.2f}' for x in after)}"]
    text = "\n".join(["# Several node launchers, one rank each", "",
                      f"Written by `bench/bench_multinode.py`; medians of {options.runs} runs after a warm-up, "
                      "contenders interleaved. Ratios are accel-launch's median over the other's.", "",
                      *(f"- {line}" for line in facts), "", *table, "", "## Targets (issue 29)", "", *verdicts, ""])
    if not options.no_write:
        (HERE / "RESULTS-multinode.md").write_text(text)
    print(text)


def stop(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so that a stopped run still removes the hosts (four_hosts' finally)."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop)
    main()
