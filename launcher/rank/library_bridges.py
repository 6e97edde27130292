"""The libraries that choose a compile backend themselves, bridged in a rank: DeepSpeed and Hugging Face.

DeepSpeed (`bridge_deepspeed`): its accelerator gets the resolved backend, and its config accepts our one key.

Both happen on the user's own `import deepspeed`, through post-import hooks that only set values (nothing of
ours imports or walks anything inside DeepSpeed's import, docs/ARCHITECTURE.md), and nothing of this runs
where DeepSpeed is not installed:
- DeepSpeed's `get_accelerator()` is wrapped when `deepspeed.accelerator.real_accelerator` has been imported
  (before anyone can call it, and so before `deepspeed.runtime.engine`, whose `DeepSpeedEngine.compile` binds
  `get_accelerator().get_compile_backend()` as its default): the accelerator it first returns is given the
  resolved backend. DeepSpeed's own validating `set_compile_backend()` runs at the engine's first `compile()`,
  and its refusal stops the rank like ours;
- DeepSpeed's `CompileConfig` forbids unknown keys, and has had no `backend` since 2024: the ranks'
  copy of it drops `compile.backend`, the key the launcher consumed, so ONE ds_config serves both.
  The user's file is never changed; every other key of `compile` reaches DeepSpeed as written.

Hugging Face (`bridge_transformers`): `TrainingArguments(torch_compile=True)` with no backend named compiles with the
resolved backend, as DeepSpeed's `engine.compile()` does (docs/CONTRACT.md section 3).

transformers fills an unset `torch_compile_backend` with "inductor" in `__post_init__` and hands it, through
accelerate's `TorchDynamoPlugin`, to `torch.compile` as an explicit backend. When `transformers.training_args`
has been imported, its `__post_init__` is wrapped (a value set) so that an unset backend becomes the resolved
one first; a backend the user set is left alone and reaches launcher.rank.compile_hook, which notes it.
Where transformers is not installed, nothing of this is imported.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from accelerators import Accelerator, is_import_path
from accelerators.packages import package_installed
from launcher.rank.after_import import after_import
from launcher.rank.refusal import refuse

__all__ = ["bridge_deepspeed", "CONSUMED_COMPILE_KEYS", "bridge_transformers"]

# The keys of a ds_config's `compile` section that the launcher reads (level 3) and DeepSpeed does not know.
CONSUMED_COMPILE_KEYS = ("backend",)


def bridge_deepspeed(accelerator: Accelerator) -> None:
    """Arrange the hooks when DeepSpeed is installed; import nothing of it."""
    if not package_installed("deepspeed"):
        return
    after_import("deepspeed.compile.config", _drop_consumed_keys)
    after_import("deepspeed.accelerator.real_accelerator", lambda module: _hand_backend(module, accelerator))
    after_import("deepspeed.runtime.engine", lambda module: _validate_at_first_compile(module, accelerator))


def _hand_backend(module: ModuleType, accelerator: Accelerator) -> None:
    """Wrap DeepSpeed's `get_accelerator()` so that the accelerator it first returns holds the resolved backend:
    the value DeepSpeed's accelerators keep, where it has one (else through its validating setter)."""
    original = module.get_accelerator
    handed: list[bool] = []

    @functools.wraps(original)
    def get_accelerator() -> Any:
        deepspeed_accelerator = original()
        if not handed:
            handed.append(True)
            if hasattr(deepspeed_accelerator, "_compile_backend"):
                deepspeed_accelerator._compile_backend = accelerator.get_compile_backend()
            else:
                _validate(deepspeed_accelerator, accelerator)
        return deepspeed_accelerator

    module.get_accelerator = get_accelerator


def _validate_at_first_compile(module: ModuleType, accelerator: Accelerator) -> None:
    """Wrap `DeepSpeedEngine.compile` so that its first call has DeepSpeed's accelerator validate the backend."""
    engine = module.DeepSpeedEngine
    original = engine.compile
    validated: list[bool] = []

    @functools.wraps(original)
    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not validated:
            validated.append(True)
            _validate(sys.modules["deepspeed.accelerator.real_accelerator"].get_accelerator(), accelerator)
        return original(self, *args, **kwargs)

    engine.compile = compile


def _validate(deepspeed_accelerator: Any, accelerator: Accelerator) -> None:
    """DeepSpeed's own `set_compile_backend()` with the resolved backend; its refusal stops the rank."""
    backend = accelerator.get_compile_backend()
    if isinstance(backend, str) and is_import_path(backend):
        _register_import_path(backend, accelerator.resolved_compile_backend())
    try:
        deepspeed_accelerator.set_compile_backend(backend)
    except ValueError as exc:
        refuse(f"DeepSpeed's accelerator: {' '.join(str(exc).split())}")


def _register_import_path(path: str, function: Any) -> None:
    """Make the import path a name in dynamo's registry, which DeepSpeed validates against and passes on."""
    import torch._dynamo

    if path not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(compiler_fn=function, name=path)


def _drop_consumed_keys(module: ModuleType) -> None:
    """Replace the module's CompileConfig by a subclass that ignores the keys the launcher consumed."""
    original = module.CompileConfig

    class CompileConfig(original):  # type: ignore[misc, valid-type]
        __doc__ = original.__doc__

        def __init__(self, strict: bool = False, **data: Any) -> None:
            for key in CONSUMED_COMPILE_KEYS:
                data.pop(key, None)
            super().__init__(strict=strict, **data)

    CompileConfig.__module__ = original.__module__
    module.CompileConfig = CompileConfig


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
