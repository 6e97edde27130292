"""accelerators/ never imports the launcher: the accelerator API stands on its own. (No cycle among its modules,
counting imports inside functions and under `if TYPE_CHECKING:`, is held with launcher/'s by
tests/test_import_flow.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import accelerators

PACKAGE = Path(accelerators.__file__).parent


def test_the_accelerators_never_import_the_launcher() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {name for name in imported if name.split(".")[0] == "launcher"}, path.name
