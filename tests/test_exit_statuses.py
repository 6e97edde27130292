"""One table of exit statuses (docs/ARCHITECTURE.md, "Rules the code keeps"): the statuses are named once, in
launcher/contract/names.py; an error carries its own (`exit_status`, as click's `exit_code`); no other module of
launcher/ writes a status as a number. Read from the source with `ast`: nothing is imported but the errors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from launcher import errors
from launcher.contract import names

ROOT = Path(__file__).resolve().parents[1] / "launcher"
TABLE = "contract/names.py"
# Where a status goes: the call, and the position of the status among its arguments.
STATUS_CALLS = {"sys.exit": 0, "os._exit": 0, "exit": 0, "JobOutcome": 0, "fail": 2}
STATUS_KEYWORDS = {"status", "exit_status", "exit_code", "code"}


def _is_number(node: ast.expr | None) -> bool:
    """An int literal, or minus one."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _first(node: ast.expr | None) -> ast.expr | None:
    """The value itself, or the first element of a tuple (a status, message pair)."""
    return node.elts[0] if isinstance(node, ast.Tuple) and node.elts else node


def _returns_status(function: ast.FunctionDef | ast.AsyncFunctionDef, in_cli: bool) -> bool:
    """Whether `function` hands back an exit status: `-> int` in cli/ (a command's status), or a pair that starts
    with one (`-> tuple[int, str]`, `-> tuple[int, str | None]`: a status and its message) anywhere."""
    shown = ast.unparse(function.returns) if function.returns is not None else ""
    return (in_cli and shown == "int") or shown.startswith("tuple[int, str")


def literal_statuses(source: str, where: str) -> list[str]:
    """`where:line what` for every exit status `source` writes as a number, and every status it names outside
    the table."""
    found = []
    in_cli = where.startswith("cli/")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            index = STATUS_CALLS.get(name)
            if index is not None and len(node.args) > index and _is_number(node.args[index]):
                found.append(f"{where}:{node.lineno} {name}({ast.unparse(node.args[index])}, ...)")
            found += [f"{where}:{node.lineno} {name}({word.arg}={ast.unparse(word.value)})" for word in node.keywords
                      if word.arg in STATUS_KEYWORDS and _is_number(word.value)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _returns_status(node, in_cli):
            found += [f"{where}:{inner.lineno} return {ast.unparse(inner.value)} in {node.name}"
                      for inner in ast.walk(node) if isinstance(inner, ast.Return) and _is_number(_first(inner.value))]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and where != TABLE and _is_number(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{where}:{node.lineno} {ast.unparse(target)} = {ast.unparse(node.value)}" for target in targets
                      if ast.unparse(target).rpartition(".")[2].upper().endswith(("_STATUS", "EXIT_CODE"))]
    return found


def test_no_module_of_the_launcher_writes_an_exit_status_as_a_number() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        found += literal_statuses(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert found == []


@pytest.mark.parametrize("source, where", [
    ("import sys\nsys.exit(3)\n", "cli/x.py"),
    ("import os\nos._exit(1)\n", "rank/x.py"),
    ("def f():\n    return JobOutcome(2, 'busy')\n", "run/x.py"),
    ("def f():\n    return JobOutcome(status=-1)\n", "run/x.py"),
    ("fail('accel-launch', 'no', 1)\n", "cli/x.py"),
    ("def main() -> int:\n    return 0\n", "cli/x.py"),
    ("def wait() -> tuple[int, str | None]:\n    return 0, None\n", "head/x.py"),
    ("WRITE_ERROR_STATUS = 1\n", "cli/x.py"),
    ("class E(Exception):\n    exit_status = 2\n", "errors.py"),
])
def test_the_rule_finds_a_status_written_as_a_number(source: str, where: str) -> None:
    assert len(literal_statuses(source, where)) == 1


@pytest.mark.parametrize("source, where", [
    ("import sys\nsys.exit(FAILURE_STATUS)\n", "cli/x.py"),
    ("def count() -> int:\n    return 1\n", "node/x.py"),  # a count, not a status
    ("SUCCESS_STATUS = 0\n", TABLE),
    ("def f():\n    return JobOutcome(exc.exit_status, str(exc))\n", "run/x.py"),
])
def test_the_rule_lets_a_named_status_or_a_count_pass(source: str, where: str) -> None:
    assert literal_statuses(source, where) == []


def test_every_error_of_the_launcher_carries_a_status_of_the_table() -> None:
    table = {getattr(names, name) for name in names.__all__ if name.endswith("_STATUS")}
    classes = [getattr(errors, name) for name in errors.__all__]
    assert {cls.__name__: cls.exit_status for cls in classes if cls.exit_status not in table} == {}


def test_a_busy_master_port_is_bad_input_with_its_status() -> None:
    """A port the user named that is taken: fixed by the user before anything starts, on either path (the
    direct path returns the error's own status too: docs/RELIABILITY.md)."""
    busy = errors.PortBusyError("127.0.0.1", 29500, "Address already in use")
    assert isinstance(busy, errors.LaunchError)
    assert busy.exit_status == names.VALIDATION_STATUS == 2
