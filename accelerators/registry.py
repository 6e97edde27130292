"""The known accelerators by name, in detection order: the one table that lookup, detection and the backend
rules read. It imports no device: `accelerators/detect.py` fills it, one `register` argument per device."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelerators.errors import UnknownAcceleratorError

if TYPE_CHECKING:  # for the annotations only: the base class sits above this table
    from accelerators.accelerator import Accelerator

ACCELERATORS: dict[str, type[Accelerator]] = {}


def register(*classes: type[Accelerator]) -> None:
    """Add `classes`, in this order, after those known; a name taken twice is refused (a bug, not user input)."""
    for cls in classes:
        if cls.name in ACCELERATORS:
            raise ValueError(f"accelerator {cls.name!r} is registered twice")
        ACCELERATORS[cls.name] = cls


def known_accelerators() -> tuple[str, ...]:
    """The accelerator names, in detection order."""
    return tuple(ACCELERATORS)


def accelerator_class(name: str) -> type[Accelerator]:
    """The accelerator class called `name`; UnknownAcceleratorError listing the known names otherwise."""
    cls = ACCELERATORS.get(name)
    if cls is None:
        raise UnknownAcceleratorError(name, known_accelerators())
    return cls


def claimants(backend: str) -> tuple[str, ...]:
    """The accelerators that claim `backend` as theirs alone; empty when any device may run it."""
    return tuple(name for name, cls in ACCELERATORS.items() if backend in cls.exclusive_backends)


def nproc_words() -> dict[str, type[Accelerator]]:
    """torchrun's device words for `--nproc-per-node` ('gpu', 'xpu', 'cpu'), each with the accelerator it counts."""
    return {cls.nproc_word: cls for cls in ACCELERATORS.values() if cls.nproc_word is not None}
