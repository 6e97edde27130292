"""Choose nodes and device slots from a hostfile: `--include` / `--exclude` (`host1:0,1@host2`),
`--num-nodes`, `--num-gpus`, with DeepSpeed's semantics.

The result keeps the hostfile's order, and a node's rank is its position in it; a host's slots are in
increasing order, however the filter named them, as DeepSpeed's own parser gives them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from launcher.contract.flag_field import Number, both, flag
from launcher.contract.hosts import HostSlots, NodeSpec
from launcher.limits import NODES, PORTS, RANKS_PER_NODE, TOTAL_RANKS
from launcher.errors import SelectionError
from launcher.head.hostfile import parse_hostfile
from launcher.head.runner_options import RunnerOptions
from launcher.head.runners import DEFAULT_RUNNER, REFUSED_RUNNERS, RUNNERS, Runner, own_flag_help

__all__ = ["HostFlags", "select_nodes"]

_INDEX = re.compile(r"[0-9]{1,18}")
_HOSTS_SHOWN = 5


@dataclass(frozen=True)
class HostFlags:
    """DeepSpeed's resource and runner flags as given (-1, "" or None: not given), each declared on its field
    (launcher.contract.flag_field)."""

    hostfile: str | None = flag("-H", "--hostfile", default=None, metavar="FILE",
                                help="Start the job on the hosts of FILE ('host slots=N' lines).")
    include: str = flag("-i", "--include", default="", metavar="HOST[:SLOTS]@...",
                        help="Only these hosts/slots of the hostfile; without one, localhost:0,2 picks local devices.")
    exclude: str = flag("-e", "--exclude", default="", metavar="HOST[:SLOTS]@...", help="All hosts/slots of the "
                        "hostfile but these; without one, localhost:1 leaves out a local device.")
    num_nodes: int = flag(*both("num-nodes"), default=-1, number=Number(minimum=-1, limit=NODES),
                          help="Use the first N hosts of the hostfile.")
    num_gpus: int = flag(*both("num-gpus", "--num-accelerators", "--num_accelerators"), default=-1,
                         number=Number(minimum=-1, limit=RANKS_PER_NODE),
                         help="Use the first N slots of each host (without a hostfile: N local ranks).")
    runner: str = flag("--launcher", default=DEFAULT_RUNNER, choices=(*RUNNERS, *REFUSED_RUNNERS),
                       any_case=True, show_default=True, help="How the hostfile's nodes are reached.")
    exports: tuple[str, ...] = flag("--export", default=(), multiple=True, metavar="NAME",
                                    help="Send this variable to every node (repeatable).")
    ssh_port: int | None = flag(*both("ssh-port"), default=None, number=Number(minimum=1, limit=PORTS),
                                help="Port of the nodes' sshd.")
    ssh_options: tuple[str, ...] = flag(*both("ssh-option"), default=(), multiple=True, metavar="KEY=VALUE",
                                        help="Extra ssh -o option (repeatable).")
    launcher_args: str = flag(*both("launcher-args"), default="", metavar="ARGS", help="More arguments for the "
                              f"runner ({', '.join(kind.program for kind in RUNNERS.values())}), as one quoted "
                              "string.")
    comment: str = flag("--comment", default="", metavar="TEXT", help=own_flag_help("comment"))
    account: str = flag("--account", default="", metavar="NAME", help=own_flag_help("account"))
    venv_script: str | None = flag(*both("venv-script"), default=None, metavar="PATH",
                                   help="A script every node sources before its launcher starts (with --hostfile).")

    def make_runner(self) -> Runner:
        """The runner `--launcher` names, with its flags (launcher.head.runners; not a refused one)."""
        options = RunnerOptions(self.launcher_args, self.comment, self.account, self.venv_script, self.ssh_port,
                                self.ssh_options)
        return RUNNERS[self.runner](options)

    def selected_nodes(self) -> tuple[NodeSpec, ...]:
        """The hostfile's nodes these flags select (a hostfile must be given)."""
        if self.hostfile is None:
            raise ValueError("selected_nodes needs a hostfile")
        return select_nodes(parse_hostfile(self.hostfile), self.include, self.exclude, self.num_nodes, self.num_gpus)


def select_nodes(
    hosts: Sequence[HostSlots], include: str = "", exclude: str = "", num_nodes: int = -1, num_gpus: int = -1
) -> tuple[NodeSpec, ...]:
    """The nodes to launch on; -1 for `num_nodes` / `num_gpus` means all."""
    if include and exclude:
        raise SelectionError("--include", include, "cannot be combined with --exclude; give one of them")
    for flag, given in (("--include", include), ("--exclude", exclude)):
        if given and (num_nodes != -1 or num_gpus != -1):
            which = "--num-nodes" if num_nodes != -1 else "--num-gpus"
            raise SelectionError(flag, given, f"cannot be combined with {which}")
    pool = {entry.host: range(entry.slots) for entry in hosts}
    if include:
        chosen = _include(pool, include)
    elif exclude:
        chosen = _exclude(pool, exclude)
    else:
        chosen = {host: tuple(slots) for host, slots in pool.items()}
    nodes = [NodeSpec(host, chosen[host]) for host in pool if chosen.get(host)]
    return _limit(nodes, num_nodes, num_gpus)


def _parse(flag: str, text: str, pool: dict[str, range]) -> dict[str, tuple[int, ...] | None]:
    """`host[:i,j]@...` as DeepSpeed reads it: each host's slots from all its parts, merged and sorted, or
    None (the whole host) when no part of it names a slot; every host and slot checked against the pool."""
    named: dict[str, set[int]] = {}
    for part in text.split("@"):
        host, colon, indices = part.partition(":")
        if not host:
            raise SelectionError(flag, part, "empty host name (expected host or host:0,1, joined by '@')")
        if host not in pool:
            raise SelectionError(flag, part, f"host {host!r} is not in the hostfile ({_some(pool)})")
        slots = named.setdefault(host, set())
        for index in indices.split(",") if colon else ():
            if not _INDEX.fullmatch(index):
                raise SelectionError(flag, part, f"{index!r} is not a slot number (expected host:0,1)")
            if int(index) not in pool[host]:
                raise SelectionError(flag, part, f"host {host!r} has slots 0-{len(pool[host]) - 1}, not {index}")
            slots.add(int(index))
    return {host: tuple(sorted(slots)) if slots else None for host, slots in named.items()}


def _some(pool: dict[str, range]) -> str:
    """The first few hosts of the hostfile, for a message that stays one short line."""
    shown = ", ".join(list(pool)[:_HOSTS_SHOWN])
    return shown if len(pool) <= _HOSTS_SHOWN else f"{shown}, ... {len(pool)} hosts"


def _include(pool: dict[str, range], text: str) -> dict[str, tuple[int, ...]]:
    return {host: tuple(pool[host]) if slots is None else slots
            for host, slots in _parse("--include", text, pool).items()}


def _exclude(pool: dict[str, range], text: str) -> dict[str, tuple[int, ...]]:
    dropped = {host: set(pool[host] if slots is None else slots)
               for host, slots in _parse("--exclude", text, pool).items()}
    chosen = {host: tuple(slot for slot in slots if slot not in dropped.get(host, ())) for host, slots in pool.items()}
    if not any(chosen.values()):
        raise SelectionError("--exclude", text, "excludes every slot of every host")
    return chosen


def _limit(nodes: list[NodeSpec], num_nodes: int, num_gpus: int) -> tuple[NodeSpec, ...]:
    if num_nodes != -1:
        if num_nodes < 1:
            raise SelectionError("--num-nodes", str(num_nodes), "must be at least 1 (or -1 for all)")
        if num_nodes > len(nodes):
            raise SelectionError("--num-nodes", str(num_nodes), f"the hostfile has only {len(nodes)} nodes")
        nodes = nodes[:num_nodes]
    if num_gpus != -1:
        if num_gpus < 1:
            raise SelectionError("--num-gpus", str(num_gpus), "must be at least 1 (or -1 for all)")
        short = next((node for node in nodes if node.nproc < num_gpus), None)
        if short is not None:
            raise SelectionError("--num-gpus", str(num_gpus), f"host {short.host!r} has only {short.nproc} slots")
        nodes = [NodeSpec(node.host, node.slots[:num_gpus]) for node in nodes]
    total = sum(node.nproc for node in nodes)
    if total > TOTAL_RANKS.maximum:
        raise SelectionError("the hostfile's selection", f"{total} ranks on {len(nodes)} nodes", str(TOTAL_RANKS))
    return tuple(nodes)
