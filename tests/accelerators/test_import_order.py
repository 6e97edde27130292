"""accelerators/ imports one way: leaf modules at the bottom, the base class and devices above, detection on top.

Read from the source (every import statement, a function's own included), not from running it, so an import
that only a rare call would run counts too; imports under `if TYPE_CHECKING:` never run and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import accelerators

PACKAGE = Path(accelerators.__file__).parent


def _imported(tree: ast.Module, modules: set[str]) -> set[str]:
    """The modules of `modules` that `tree` imports: `from package import name` is `package.name` when that is a
    module, else `package` (a package's `__init__` runs before any of its modules: not an import of it)."""
    skipped = {id(node) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node.test)}
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if id(node) in skipped:
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found & modules


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _graph() -> dict[str, set[str]]:
    """Each accelerators module (the package itself as `accelerators`) and the accelerators modules it imports."""
    modules = {f"accelerators.{path.stem}": path for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    modules["accelerators"] = PACKAGE / "__init__.py"
    return {name: _imported(ast.parse(path.read_text(encoding="utf-8")), set(modules)) - {name}
            for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, as the modules along it, or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return None
        for target in sorted(graph[name]):
            cycle = visit(target, [*path, name])
            if cycle is not None:
                return cycle
        done.add(name)
        return None

    for name in sorted(graph):
        cycle = visit(name, [])
        if cycle is not None:
            return cycle
    return None


def test_no_two_accelerators_modules_import_each_other_even_through_others() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_closed_by_an_import_inside_a_function() -> None:
    later = ast.parse("def later():\n    from accelerators import registry\n")
    graph = {"accelerators.registry": {"accelerators.backends"}}
    graph["accelerators.backends"] = _imported(later, {*graph, "accelerators.backends"})
    assert _cycle(graph) == ["accelerators.backends", "accelerators.registry", "accelerators.backends"]


def test_the_accelerators_never_import_the_launcher() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {name for name in imported if name.split(".")[0] == "launcher"}, path.name
