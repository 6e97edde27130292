"""docs/ARCHITECTURE.md is a map a contributor follows: every file it names exists, every name it places in a file is
defined there, and its "Where new things go" recipes name the attributes the base classes really ask for. A recipe
that went stale with a move or a rename fails here. Read from the source with `ast`: nothing is imported."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAP = REPO / "docs" / "ARCHITECTURE.md"
PATH = r"(?:launcher|accelerators|tests|docs|bench)/[\w/.]+"
# `name` (`path`), `name` in `path`, `path` (`name`: the ways the map places a name in a file.
NAME_THEN_PATH = re.compile(rf"`(\w+)(?:\([^`]*\))?`(?: subclass)? (?:\(|in )`({PATH}\.py)`")
PATH_THEN_NAME = re.compile(rf"`({PATH}\.py)` \(`(\w+)`")


def _text() -> str:
    return MAP.read_text(encoding="utf-8")


def _section(title: str) -> str:
    return _text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


@cache
def _defined(path: Path) -> frozenset[str]:
    """The names a module defines at its top level or in its classes (methods, class attributes)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def _placed() -> list[tuple[str, str]]:
    """(name, path) for every name the map places in a file."""
    text = _text()
    return ([(name, path) for name, path in NAME_THEN_PATH.findall(text)]
            + [(name, path) for path, name in PATH_THEN_NAME.findall(text)])


def test_every_file_the_map_names_exists() -> None:
    named = set(re.findall(rf"`({PATH})`", _text())) | set(re.findall(rf"\(({PATH}\.md)[#)]", _text()))
    assert named and sorted(path for path in named if not (REPO / path.split("#")[0]).exists()) == []


def test_every_name_the_map_places_in_a_file_is_defined_there() -> None:
    placed = _placed()
    assert len(placed) >= 15
    assert [f"{name} in {path}" for name, path in placed if name not in _defined(REPO / path)] == []


def _base_attributes(path: str, base: str) -> frozenset[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == base)
    found = {node.name for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return frozenset(found)


@pytest.mark.parametrize("recipe, path, base", [
    ("**A new accelerator**", "accelerators/accelerator.py", "Accelerator"),
    ("**A new runner for hostfile launches**", "launcher/head/runners.py", "Runner"),
])
def test_each_recipe_asks_for_what_the_base_class_declares(recipe: str, path: str, base: str) -> None:
    """The attributes a recipe lists in its parentheses are the base class's own."""
    paragraph = _section("Where new things go").split(f"- {recipe}", 1)[1].split("\n- ", 1)[0]
    asked = set(re.findall(r"`(\w+)`", paragraph.split("(", 1)[1].split(")", 1)[0]))
    assert asked and sorted(asked - _base_attributes(path, base)) == []


def test_the_option_recipe_names_where_each_kind_of_flag_is_documented() -> None:
    """Our own flags are in the README's command-line table; torchrun's and DeepSpeed's in docs/FLAGS.md."""
    recipe = _section("Where new things go").split("- **A new option**", 1)[1].split("\n- ", 1)[0]
    assert "docs/FLAGS.md" in recipe and "README" in recipe
    assert "| `--compile-cache-dir DIR` |" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_map_is_shorter_than_round_fives_245_lines() -> None:
    assert len(_text().splitlines()) < 245
