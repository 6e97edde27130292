"""How many ranks this node runs for `--nproc-per-node`: a number, `auto` (the accelerator's default), or a
device's word as torchrun takes it (`gpu`, `xpu`, `cpu`)."""

from __future__ import annotations

from accelerators import Accelerator
from accelerators.accelerator import nproc_words
from launcher.errors import UsageError
from launcher.resolve.node_facts import AcceleratorFacts

__all__ = ["ranks_per_node"]


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
