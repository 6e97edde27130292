"""Post-import hooks: a function runs once, right after a module's first import, and never imports it itself."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from launcher.rank.after_import import after_import


@pytest.fixture
def module_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder on sys.path for throwaway modules, forgotten again afterwards."""
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [key for key in sys.modules if key.startswith("hooked_")]:
        del sys.modules[name]


def test_the_function_runs_after_the_first_import_and_only_then(module_dir: Path) -> None:
    (module_dir / "hooked_plain.py").write_text("VALUE = 41\n")
    seen: list[int] = []
    after_import("hooked_plain", lambda module: seen.append(module.VALUE + 1))
    assert seen == [] and "hooked_plain" not in sys.modules
    import hooked_plain  # noqa: F401

    assert seen == [42]
    del sys.modules["hooked_plain"]
    import hooked_plain  # noqa: F401,F811  (a second import runs nothing more)

    assert seen == [42]


def test_a_module_already_imported_gets_the_function_at_once(module_dir: Path) -> None:
    (module_dir / "hooked_early.py").write_text("")
    import hooked_early

    seen: list[ModuleType] = []
    after_import("hooked_early", seen.append)
    assert seen == [hooked_early]


def test_a_submodule_hook_sees_the_package_finished_and_others_are_untouched(module_dir: Path) -> None:
    package = module_dir / "hooked_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from hooked_pkg import inner\nAFTER_INNER = True\n")
    (package / "inner.py").write_text("from hooked_pkg import leaf\n")
    (package / "leaf.py").write_text("")
    seen: list[tuple[str, bool]] = []
    after_import("hooked_pkg", lambda module: seen.append((module.__name__, module.AFTER_INNER)))
    after_import("hooked_pkg.inner", lambda module: seen.append((module.__name__, hasattr(module, "leaf"))))
    import hooked_pkg  # noqa: F401

    assert seen == [("hooked_pkg.inner", True), ("hooked_pkg", True)]


def test_a_module_that_fails_to_import_keeps_its_hook_for_the_next_try(module_dir: Path) -> None:
    source = module_dir / "hooked_broken.py"
    source.write_text("raise RuntimeError('not yet')\n")
    seen: list[str] = []
    after_import("hooked_broken", lambda module: seen.append(module.__name__))
    with pytest.raises(RuntimeError):
        import hooked_broken  # noqa: F401
    assert seen == []
    source.write_text("")
    import importlib

    importlib.invalidate_caches()
    import hooked_broken  # noqa: F401,F811

    assert seen == ["hooked_broken"]
