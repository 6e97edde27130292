"""Imports run one way (docs/ARCHITECTURE.md): each folder of launcher/ imports only folders below it in the
flow, and the leaves (launcher/contract/, the modules directly in launcher/) import only leaves; and no module of
launcher/ or accelerators/ reaches itself through its imports. Read from the source with `ast`: nothing is
imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import cycles, graph, imports

ROOT = Path(__file__).resolve().parents[1] / "launcher"
# The flow, top to bottom; folders on one line are side by side and never import each other. A package's
# `__main__` is a command line, so it stands with cli.
FLOW = (
    ("cli",),
    ("job",),
    ("head", "node"),
    ("run",),
    ("rank",),
)
LEVEL = {folder: level for level, folders in enumerate(FLOW) for folder in folders}
LEAF = len(FLOW)


def _folder(module: str) -> str | None:
    """The flow folder `module` (dotted, without `launcher.`) belongs to; None for a leaf."""
    if module.rpartition(".")[2] == "__main__":
        return "cli"
    return next((folder for folder in LEVEL if module == folder or module.startswith(folder + ".")), None)


def _allowed(source: str, target: str) -> bool:
    """Whether module `source` may import `target`: a leaf, its own folder, or a folder below its own."""
    source_folder, target_folder = _folder(source), _folder(target)
    if target_folder is None or target_folder == source_folder:
        return True
    return source_folder is not None and LEVEL[target_folder] > LEVEL[source_folder]


def _imports(path: Path, prefix: str = "launcher.") -> list[tuple[int, str]]:
    """(line, module) for every module under `prefix` that `path` imports, at any depth of its code."""
    package = list(path.relative_to(ROOT.parent).parent.parts) if path.is_relative_to(ROOT.parent) else []
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            targets = [f"{name}.{alias.name}" for alias in node.names] if node.module in (None, "launcher") else [name]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, target) for target in targets if (target + ".").startswith(prefix)]
    return found


def _violations() -> list[str]:
    lines = []
    for path in sorted(ROOT.rglob("*.py")):
        source = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for line, target in _imports(path):
            if not _allowed(source, target.removeprefix("launcher.")):
                lines.append(f"launcher/{path.relative_to(ROOT)}:{line} imports {target}, which is not below "
                             f"{_folder(source) or 'a leaf'} in the flow")
    return lines


def test_every_folder_imports_only_folders_below_it_in_the_flow() -> None:
    assert _violations() == []


def _modules(folders: tuple[str, ...] = ()) -> list[tuple[str, Path]]:
    """(dotted name without `launcher.`, path) of every module of launcher/ outside `folders`."""
    found = [(".".join(path.relative_to(ROOT).with_suffix("").parts), path) for path in sorted(ROOT.rglob("*.py"))]
    return [(name, path) for name, path in found if not any(_within(name, folder) for folder in folders)]


def _within(module: str, folder: str) -> bool:
    return module == folder or module.startswith(folder + ".")


def test_on_the_launcher_side_only_the_engine_imports_torch() -> None:
    """The run side is torch-free but for run/engine/ (torch elastic's agent); launcher/rank/ runs in the ranks."""
    found = [f"launcher/{path.relative_to(ROOT)}:{line} imports {target}"
             for name, path in _modules(("run.engine", "rank")) for line, target in _imports(path, "torch.")]
    assert found == []


def test_the_torch_rule_sees_a_bare_import_and_one_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text("import torchvision\nimport torch\n\ndef later():\n    from torch.distributed import run\n")
    assert _imports(module, "torch.") == [(2, "torch"), (5, "torch.distributed")]


def test_only_the_command_line_drives_the_run_side() -> None:
    """The run side is reached from the drivers of cli/ alone (a job, `stacks`, `status`)."""
    found = [f"launcher/{path.relative_to(ROOT)}:{line} imports {target}"
             for name, path in _modules(("run", "cli")) for line, target in _imports(path)
             if _within(target.removeprefix("launcher."), "run")]
    assert found == []


@pytest.mark.parametrize("source, target, allowed", [
    ("run.engine.engine_run", "job.build_job", False),
    ("head.commands", "node.identity", False),
    ("node.identity", "head.selection", False),
    ("node.node_plan", "job.build_job", False),
    ("rank.compile_hook", "job.backend_order", False),
    ("contract.job_config", "job.build_job", False),
    ("node.__main__", "cli.start", True),
    ("job.build_job", "node.node_plan", True),
    ("run.engine.engine_run", "node.node_plan", False),
    ("run.direct_run", "contract.job_config", True),
    ("rank.bootstrap", "contract.names", True),
])
def test_the_rule_tells_an_upward_or_sideways_import_from_a_downward_one(source: str, target: str,
                                                                         allowed: bool) -> None:
    assert _allowed(source, target) == allowed


# Import cycles that a rewrite on another branch removes: the lead empties this list at merge.
PENDING_CYCLES: list[list[str]] = []


def test_no_module_of_the_launcher_or_the_accelerators_reaches_itself_through_its_imports() -> None:
    """Every import counts: inside a function, under `if TYPE_CHECKING:`, and of a package (its `__init__`)."""
    assert [cycle for cycle in cycles(graph()) if cycle not in PENDING_CYCLES] == []


def test_the_cycle_guard_counts_an_import_inside_a_function_and_under_type_checking(tmp_path: Path) -> None:
    files = {
        "a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from launcher import b\n",
        "b": "def later():\n    import launcher.c\n",
        "c": "from launcher.a import thing\n",
        "d": "from launcher import a\n",
    }
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    known = {f"launcher.{name}" for name in files}
    edges = {f"launcher.{name}": {target for _, target in imports(f"launcher.{name}", tmp_path / f"{name}.py", known)}
             for name in files}
    assert cycles(edges) == [["launcher.a", "launcher.b", "launcher.c"]]
