"""The measurements of bench_scale.py: what grows with the node count, each at the sizes given."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from measure import BIN, Row, free_port, interleave

__all__ = ["agreement", "torch_rendezvous", "hostfile", "fan_out", "loopback"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENV = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "TORCH_"))}
ENV["TORCH_CPP_LOG_LEVEL"] = "ERROR"
WORK = Path(tempfile.mkdtemp(prefix="bench-scale-"))
IMPORT_TORCH = HERE / "scripts" / "import_torch.py"
NOOP = HERE / "scripts" / "noop.py"


def agreement(sizes: list[int]) -> list[list[str]]:
    """The backend agreement with N threads as nodes, one store client each: agreeing, then one differing."""
    from tests.run.engine.rendezvous.simulated_nodes import SimulatedNodes, claims_with_one_differing

    rows = []
    for nodes in sizes:
        began = time.perf_counter()
        simulated = SimulatedNodes(nodes)
        connected = time.perf_counter() - began
        agreed = simulated.agree(claims_with_one_differing(nodes, None))
        differing = nodes * 2 // 3
        refused = simulated.agree(claims_with_one_differing(nodes, differing))
        stopped = sum(1 for result in refused.results if result and "BackendMismatchError" in result)
        rows.append([f"{nodes:,}", f"{connected:.1f}", str(max(agreed.calls)), f"{sum(agreed.calls) / nodes:.1f}",
                     f"{agreed.seconds:.2f}", str(max(refused.calls)), f"{refused.seconds:.2f}",
                     f"{stopped:,} of {nodes:,}" + ("" if agreed.results == [None] * nodes else " (agreeing run failed)")])
        del simulated
    return rows


def torch_rendezvous(sizes: list[int], timeout: float) -> list[list[str]]:
    """torch's own c10d rendezvous (DynamicRendezvousHandler), N threads as nodes on one TCPStore."""
    from torch.distributed import TCPStore
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import create_backend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler

    from tests.run.engine.rendezvous.simulated_nodes import all_at_once

    rows = []
    for nodes in sizes:
        server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        params = [RendezvousParameters(backend="c10d", endpoint=f"127.0.0.1:{server.port}", run_id=f"bench{nodes}",
                                       min_nodes=nodes, max_nodes=nodes, is_host=False, join_timeout=timeout,
                                       local_addr="127.0.0.1") for _ in range(nodes)]
        def handler(node_params: RendezvousParameters):
            backend, store = create_backend(node_params)
            return create_handler(store, backend, node_params)

        with ThreadPoolExecutor(min(nodes, 256)) as pool:
            handlers = list(pool.map(handler, params))
        finished: list[bool] = []

        def node(index: int) -> None:
            try:
                handlers[index].next_rendezvous()
                finished.append(True)
            except Exception:  # a node that did not make it is counted by the row, not raised
                pass

        wall = all_at_once(nodes, node)
        rows.append([f"{nodes:,}", f"{wall:.2f}", f"{len(finished):,} of {nodes:,}"])
        for handler in handlers:
            handler.shutdown()
        del handlers, server
    return rows


def hostfile(sizes: list[int], timeout: float) -> list[list[str]]:
    """Hostfile read and selection through the launcher's functions, and a whole `--dry-run`, per line count."""
    rows = []
    for lines in sizes:
        path = WORK / f"hostfile-{lines}"
        path.write_text("".join(f"node{index:06d} slots=1\n" for index in range(lines)))
        select = ("import sys, time; from launcher.head.selection import HostFlags; t = time.perf_counter();"
                  " n = len(HostFlags(hostfile=sys.argv[1]).selected_nodes()); print(time.perf_counter() - t, n)")
        read = _timed([sys.executable, "-c", select, str(path)], timeout, parse=True)
        dry = _timed([str(BIN / "accel-launch"), "--hostfile", str(path), "--dry-run", str(NOOP)], timeout)
        rows.append([f"{lines:,}", read, dry])
    return rows


def _timed(argv: list[str], timeout: float, parse: bool = False) -> str:
    """Seconds `argv` took (or the seconds it printed), or how long it ran before it was stopped."""
    began = time.perf_counter()
    try:
        done = subprocess.run(argv, env=ENV, cwd=WORK, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:g} (stopped)"
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    return f"{float(done.stdout.split()[0]):.2f}" if parse else f"{time.perf_counter() - began:.2f}"


def fan_out(hosts: int, ssh_seconds: float) -> list[list[str]]:
    """A hostfile launch of `hosts` nodes whose ssh is a stand-in that sleeps, then exits 0: what the head holds."""
    stand_in = WORK / "fake-ssh"
    stand_in.mkdir(exist_ok=True)
    ssh = stand_in / "ssh"
    ssh.write_text(f"#!/bin/sh\nexec sleep {ssh_seconds:g}\n")
    ssh.chmod(0o755)
    path = WORK / f"fan-out-{hosts}"
    path.write_text("".join(f"198.18.{index // 250}.{index % 250 + 1} slots=1\n" for index in range(hosts)))
    env = {**ENV, "PATH": f"{stand_in}{os.pathsep}{ENV['PATH']}"}
    began = time.perf_counter()
    head = psutil.Popen([str(BIN / "accel-launch"), "--hostfile", str(path), str(NOOP)], env=env, cwd=WORK,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = {"children": 0, "fds": 0, "head_rss": 0.0, "children_rss": 0.0}
    all_started = None
    while head.poll() is None:
        try:
            children = head.children()
            peak["fds"] = max(peak["fds"], head.num_fds())
            peak["head_rss"] = max(peak["head_rss"], head.memory_info().rss / 2**20)
            cpu = head.cpu_times()
        except psutil.NoSuchProcess:
            break
        peak["children"] = max(peak["children"], len(children))
        if len(children) >= hosts and all_started is None:
            all_started = time.perf_counter() - began
            peak["children_rss"] = sum(_rss(child) for child in children) / 2**20
        time.sleep(0.2)
    wall = time.perf_counter() - began
    status = head.wait()
    head_cpu = cpu.user + cpu.system
    return [[f"{hosts:,}", f"{status}", f"{all_started:.2f}" if all_started else "-", f"{peak['children']:,}",
             f"{peak['fds']:,}", f"{peak['head_rss']:.0f}", f"{peak['children_rss']:.0f}", f"{head_cpu:.1f}",
             f"{wall:.1f}"]]


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:
        return 0


def loopback(sizes: list[int], runs: int) -> list[Row]:
    """N node launchers (1 rank each) on loopback c10d against N torchruns, interleaved, wall to the last exit."""
    rows = []
    for nodes in sizes:
        def launch(command: list[str]) -> Callable[[], float]:
            def once() -> float:
                endpoint = f"127.0.0.1:{free_port()}"
                argv = [*command, "--nnodes", str(nodes), "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                        "--rdzv-endpoint", endpoint, "--rdzv-id", f"bench{nodes}", str(IMPORT_TORCH)]
                began = time.perf_counter()
                processes = [subprocess.Popen(argv, env=ENV, cwd=WORK, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.PIPE, text=True) for _ in range(nodes)]
                outputs = [process.communicate(timeout=600) for process in processes]
                wall = time.perf_counter() - began
                failed = [(process.returncode, err[-500:]) for process, (_, err) in zip(processes, outputs)
                          if process.returncode != 0]
                if failed:
                    raise RuntimeError(f"{' '.join(command)} with {nodes} nodes: {failed[0]}")
                return wall

            return once

        samples = interleave({"accel": launch([str(BIN / "accel-launch")]), "torchrun": launch([str(BIN / "torchrun")])},
                             runs, warmup=0)
        rows.append(Row(f"{nodes} node launchers on loopback, 1 rank each", "s", samples["accel"], samples["torchrun"]))
    return rows

