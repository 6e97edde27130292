"""Vendor packages: looked up without importing them, so an absent one costs nothing, and imported only when there."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from types import ModuleType

log = logging.getLogger(__name__)


def package_installed(package: str) -> bool:
    """True when `package` can be imported; looks it up without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def import_if_installed(package: str, module: str) -> ModuleType | None:
    """`module` imported when top-level `package` is installed (looked up first, so absence costs nothing)."""
    if not package_installed(package):
        return None
    try:
        return importlib.import_module(module)
    except Exception as exc:  # a broken vendor install must not break detection
        log.warning("%s is installed but importing %s failed: %s", package, module, exc)
        return None
