"""Modules named and sized by role (docs/ARCHITECTURE.md, "Rules the code keeps"): at most 112 modules in launcher/
and accelerators/ (every file but an `__init__.py`), no two modules of launcher/ share a file name, at most 4 are
under 30 lines, and one under 30 lines has more than one caller (else it joins its caller). In those last two rules
a package's `__init__.py` (a docstring and re-exports) and `__main__.py` (the entry point `python -m` runs, which
cannot join its caller) are not counted."""

from __future__ import annotations

from collections import Counter

from tests.import_graph import graph, modules

SMALL = 30
MOST_SMALL = 4
MOST_MODULES = 112
NOT_COUNTED = {"__init__.py", "__main__.py"}


def _launcher_modules() -> dict[str, int]:
    """Each counted module of launcher/ and its number of lines."""
    return {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
            if name.startswith("launcher.") and path.name not in NOT_COUNTED}


def small_modules_with_one_caller(sizes: dict[str, int], edges: dict[str, set[str]]) -> list[str]:
    """The modules under SMALL lines that at most one other module imports."""
    return [f"{name} ({lines} lines) is imported by {sorted(source for source in edges if name in edges[source])}"
            for name, lines in sorted(sizes.items()) if lines < SMALL
            and sum(name in targets for targets in edges.values()) <= 1]


def test_the_launcher_and_the_accelerators_hold_at_most_112_modules() -> None:
    counted = [name for name, path in modules().items() if path.name != "__init__.py"]
    assert len(counted) <= MOST_MODULES, f"{len(counted)} modules: join a module to its one caller first"


def test_no_two_modules_of_the_launcher_share_a_file_name() -> None:
    names = Counter(path.name for name, path in modules().items() if name.startswith("launcher."))
    assert {name: count for name, count in names.items() if count > 1 and name not in NOT_COUNTED} == {}


def test_at_most_four_modules_of_the_launcher_are_under_thirty_lines() -> None:
    small = sorted(name for name, lines in _launcher_modules().items() if lines < SMALL)
    assert len(small) <= MOST_SMALL, small


def test_a_module_under_thirty_lines_has_more_than_one_caller() -> None:
    found = small_modules_with_one_caller(_launcher_modules(), graph())
    assert found == []


def test_the_rule_finds_a_small_module_with_one_caller() -> None:
    edges = {"launcher.a": {"launcher.tiny", "launcher.shared"}, "launcher.b": {"launcher.shared"}}
    sizes = {"launcher.a": 80, "launcher.b": 80, "launcher.tiny": 12, "launcher.shared": 12}
    assert small_modules_with_one_caller(sizes, edges) == ["launcher.tiny (12 lines) is imported by ['launcher.a']"]
