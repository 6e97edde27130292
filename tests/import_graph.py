"""The import graph of launcher/ and accelerators/, read from the source with `ast` (nothing is imported): every
import statement counts, one inside a function and one under `if TYPE_CHECKING:` included, since either closes
a cycle as surely as a module-level one (at run time, or for the reader and the type checker)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("launcher", "accelerators")


def modules() -> dict[str, Path]:
    """Every module of PACKAGES by its dotted name; a package by its own name (its `__init__.py`)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, module) for every module of `known` that module `name` (at `path`) imports: `from package import
    x` is `package.x` when that is a module, else `package`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[:len(parts) - node.level + 1], *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found += [(node.lineno, target) for target in targets if target in known]
    return found


def graph() -> dict[str, set[str]]:
    """Each module and the modules of PACKAGES it imports (itself left out)."""
    known = modules()
    return {name: {target for _, target in imports(name, path, set(known))} - {name} for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `edges`: each group of modules that reach one another, sorted (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in sorted(edges.get(name, ())):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            group = []
            while not group or group[-1] != name:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(groups)
