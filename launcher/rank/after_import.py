"""Run a function right after a module is first imported, without importing it ourselves.

The rank's bootstrap uses this to act when the user's own code imports `torch._dynamo` or DeepSpeed,
so that a script which never compiles never pays for dynamo, and the user's `import deepspeed` stays
the one that imports it. A module that is already imported gets its function at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["after_import"]

Callback = Callable[[ModuleType], None]


class _AfterImportFinder:
    """First on sys.meta_path: finds nothing itself, but wraps the loader of the modules it watches.

    (A meta path finder needs only `find_spec`; importlib.abc's base class would cost the rank 14 ms.)"""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callback]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.callbacks:
            return None
        spec = _spec_from_other_finders(self, fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_then_call(module: ModuleType) -> None:
            if module.__name__ != fullname:  # a loader shared with other modules: theirs run as before
                run(module)
                return
            del loader.exec_module  # back to the loader's own method
            run(module)
            for callback in self.callbacks.pop(fullname, []):
                callback(module)

        loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec


def _spec_from_other_finders(
    finder: _AfterImportFinder, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


_FINDER = _AfterImportFinder()


def after_import(module_name: str, callback: Callback) -> None:
    """Call `callback(module)` once `module_name` has been imported: now if it is, else right after its import."""
    module = sys.modules.get(module_name)
    if module is not None:
        callback(module)
        return
    _FINDER.callbacks.setdefault(module_name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
