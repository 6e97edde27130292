"""Hugging Face in a rank: `TrainingArguments(torch_compile=True)` with no backend named compiles with the
resolved backend, as DeepSpeed's `engine.compile()` does (docs/CONTRACT.md section 3).

transformers fills an unset `torch_compile_backend` with "inductor" in `__post_init__` and hands it, through
accelerate's `TorchDynamoPlugin`, to `torch.compile` as an explicit backend. When `transformers.training_args`
has been imported, its `__post_init__` is wrapped (a value set) so that an unset backend becomes the resolved
one first; a backend the user set is left alone and reaches launcher.rank.compile_hook, which notes it.
Where transformers is not installed, nothing of this is imported.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from accelerators import Accelerator
from accelerators.packages import package_installed
from launcher.rank.after_import import after_import

__all__ = ["bridge_transformers"]


def bridge_transformers(accelerator: Accelerator) -> None:
    """Arrange the hook when transformers is installed; import nothing of it."""
    if not package_installed("transformers"):
        return
    after_import("transformers.training_args", lambda module: _fill_unset_backend(module, accelerator))


def _fill_unset_backend(module: ModuleType, accelerator: Accelerator) -> None:
    arguments = module.TrainingArguments
    original = arguments.__post_init__

    @functools.wraps(original)
    def __post_init__(self: Any) -> None:
        wants_compile = self.torch_compile or self.torch_compile_mode is not None
        name = accelerator.get_compile_backend()
        if wants_compile and self.torch_compile_backend is None and isinstance(name, str) and _accelerate_takes(name):
            self.torch_compile_backend = name
        original(self)

    arguments.__post_init__ = __post_init__


def _accelerate_takes(name: str) -> bool:
    """True when accelerate's TorchDynamoPlugin, which the Trainer hands the backend to, knows `name` (its enum
    lists dynamo's names); another (an import path) stays unset, so the Trainer's "inductor" is used and noted."""
    try:
        from accelerate.utils import DynamoBackend
    except ImportError:
        return True  # the Trainer compiles through torch.compile alone
    return name.upper() in DynamoBackend.__members__
