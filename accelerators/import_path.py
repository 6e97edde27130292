"""Compile backends given as an import path ('pkg.mod:fn' or dotted 'pkg.mod.fn'): told apart from names, split,
resolved to a callable."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any


class ImportPathError(ValueError):
    """An import path that names no callable; `reason` says why, in one line."""

    def __init__(self, reason: str) -> None:
        self.reason = " ".join(reason.split())
        super().__init__(self.reason)


def is_import_path(backend: str) -> bool:
    """True when `backend` reads as an import path ('pkg.mod:fn' or 'pkg.mod.fn') rather than a name."""
    return "." in backend or ":" in backend


def split_import_path(path: str) -> tuple[str, list[str]]:
    """The module part and the attribute chain of `path`; ImportPathError when a part is empty."""
    module_name, colon, attrs = path.partition(":")
    if not colon:
        module_name, _, attrs = path.rpartition(".")
    parts = attrs.split(".")
    if not module_name or any(not part for part in module_name.split(".") + parts):
        raise ImportPathError(f"'{path}' is not a valid import path; use 'package.module:function'")
    return module_name, parts


class _ExitCalled(BaseException):
    """`os._exit` called by the module being imported, in the importing thread: its status."""

    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__(status)


def _import(module_name: str) -> ModuleType | None:
    """The module, or None when it (or a parent package) does not exist; whatever else ends its import (an
    exception of any kind, KeyboardInterrupt included, or `os._exit` in the importing thread) is an
    ImportPathError: the module is the user's code, refused in one line rather than ending the rank."""
    real_exit, importer = os._exit, (os.getpid(), threading.get_ident())

    def exit_called(status: int) -> None:
        if (os.getpid(), threading.get_ident()) != importer:  # a child the module forked, another thread
            real_exit(status)
        raise _ExitCalled(status)

    os._exit = exit_called
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            return None
        raise ImportPathError(f"module '{module_name}' raised ModuleNotFoundError on import: {exc}") from exc
    except _ExitCalled as exc:
        raise ImportPathError(f"module '{module_name}' called os._exit({exc.status}) on import") from None
    except BaseException as exc:  # noqa: BLE001  (the user's module: whatever it raises is its refusal)
        raise ImportPathError(f"module '{module_name}' raised {type(exc).__name__} on import: {exc}") from None
    finally:
        os._exit = real_exit


def _module_and_rest(path: str) -> tuple[ModuleType, list[str]]:
    """Import the longest importable module prefix of `path`; return it and the attributes left."""
    module_name, attrs = split_import_path(path)
    while True:
        module = _import(module_name)
        if module is not None:
            return module, attrs
        parent, _, last = module_name.rpartition(".")
        if ":" in path or not parent:
            raise ImportPathError(f"module '{module_name}' not found")
        module_name, attrs = parent, [last, *attrs]


def resolve_import_path(path: str) -> Callable[..., Any]:
    """The callable that `path` names; ImportPathError with the reason otherwise."""
    target: Any
    target, attrs = _module_and_rest(path)
    where = target.__name__
    for attr in attrs:
        if not hasattr(target, attr):
            raise ImportPathError(f"'{where}' has no attribute '{attr}'")
        target = getattr(target, attr)
        where = f"{where}.{attr}"
    if not callable(target):
        raise ImportPathError(f"'{path}' is a {type(target).__name__}, not a callable")
    return target
