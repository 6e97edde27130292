"""This node's ranks and devices. DeepSpeed's resource flags without a hostfile: `--num_gpus N`, `--include
localhost:0,2`, `--exclude localhost:1`, `--num_nodes 1` choose this node's devices, as `deepspeed` does on one
machine.

How many ranks this node runs for `--nproc-per-node` (`ranks_per_node`): a number, `auto` (the accelerator's
default), or a device's word as torchrun takes it (`gpu`, `xpu`, `cpu`).
"""

from __future__ import annotations

from dataclasses import dataclass

from accelerators import Accelerator
from accelerators.accelerator import nproc_words
from launcher.contract.hosts import HostSlots
from launcher.errors import UsageError
from launcher.limits import RANKS_PER_NODE, check_count, whole_number
from launcher.head.selection import select_nodes
from launcher.node.node_check import AcceleratorFacts

__all__ = ["LocalSelection", "LOCALHOST", "ranks_per_node"]

LOCALHOST = "localhost"


@dataclass(frozen=True)
class LocalSelection:
    """The DeepSpeed resource flags as given; -1 means not given, as in DeepSpeed."""

    include: str = ""
    exclude: str = ""
    num_gpus: int = -1
    num_nodes: int = -1

    def __post_init__(self) -> None:
        if self.num_nodes > 1:
            raise UsageError("--num_nodes", self.num_nodes,
                             "without --hostfile there is one node, this one; give --hostfile for more")
        if self.num_gpus != -1:
            check_count(self.num_gpus, "--num_gpus", RANKS_PER_NODE, minimum=1)
        for flag, text in (("--include", self.include), ("--exclude", self.exclude)):
            for part in filter(None, text.split("@")):
                host, colon, indices = part.partition(":")
                if host != LOCALHOST:
                    raise UsageError(flag, text, f"without --hostfile the only host is {LOCALHOST} "
                                     f"(e.g. {LOCALHOST}:0,2); give --hostfile for other hosts")
                for index in indices.split(",") if colon else ():
                    whole_number(index, flag, RANKS_PER_NODE, index=True)

    @property
    def chooses_slots(self) -> bool:
        """True when these flags decide which (and so how many) local ranks start."""
        return bool(self.include or self.exclude) or self.num_gpus != -1

    def slots(self, pool_size: int) -> tuple[int, ...]:
        """The chosen device indices out of `pool_size` (devices here, or logical CPUs on cpu)."""
        nodes = select_nodes([HostSlots(LOCALHOST, pool_size)], self.include, self.exclude, num_gpus=self.num_gpus)
        return nodes[0].slots

    def highest_slot(self) -> int:
        """The highest device index or count these flags name (what a pool without devices must hold)."""
        named = [int(index) for part in self.include.split("@") for index in part.partition(":")[2].split(",")
                 if index]
        return max([*named, self.num_gpus - 1, 0])


def ranks_per_node(value: str, accelerator: AcceleratorFacts) -> int:
    """This node's rank count for --nproc-per-node `value`: a number, `auto`, or a device's word (torchrun's
    `gpu`, `xpu`, `cpu`); UsageError naming what is accepted otherwise."""
    if value == "auto":
        return accelerator.default_nproc
    words = nproc_words()
    if value in words:
        return _count_of(value, words[value])
    try:
        nproc = int(value)
    except ValueError:
        *others, last = ["a whole number", "auto", *words]
        raise UsageError("--nproc-per-node", value, f"expected {', '.join(others)} or {last}") from None
    if nproc < 1:
        raise UsageError("--nproc-per-node", value, "must be at least 1")
    limit = accelerator.max_ranks_per_node
    if limit is not None and nproc > limit:
        raise UsageError(
            "--nproc-per-node", value, f"{accelerator.name} has {limit} device{'s' if limit != 1 else ''} here"
        )
    return nproc


def _count_of(word: str, device: type[Accelerator]) -> int:
    """torchrun's --nproc-per-node gpu|xpu|cpu: what that device's word means, an error where it has none."""
    if not device.is_available():
        reason = f"{device.name} is not available here: {device.unavailable_reason()}"
        raise UsageError("--nproc-per-node", word, reason)
    return device.word_nproc()
