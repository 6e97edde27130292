"""What importing the package and reading the backend cost: no torch, no torch._dynamo, no side effects."""

from __future__ import annotations

import pytest

IMPORT_ONLY = "import sys, accelerators; print('torch' in sys.modules)"

GET_ONLY = """
import sys
from accelerators import get_accelerator
acc = get_accelerator()
print(acc.get_compile_backend(), acc.get_compile_backend(), 'torch._dynamo' in sys.modules)
"""

EXPLAIN_ONLY = """
import sys
from accelerators import explain_unsupported
err = explain_unsupported('tvm', 'cpu', ['eager', 'inductor'])
print(err.reason, '|', explain_unsupported('eager', 'cpu', ['eager']), '|', 'torch' in sys.modules)
"""


def test_importing_accelerators_does_not_import_torch(run_python) -> None:
    assert run_python(IMPORT_ONLY).split() == ["False"]


@pytest.mark.parametrize("override", ["cpu", ""], ids=["override cpu", "auto-detected"])
def test_get_compile_backend_does_not_import_dynamo(run_python, override: str) -> None:
    assert run_python(GET_ONLY, {"ACCEL_ACCELERATOR": override}).split()[-1] == "False"


def test_explain_unsupported_judges_names_without_importing_torch(run_python) -> None:
    reason, accepted, torch_imported = (part.strip() for part in run_python(EXPLAIN_ONLY).split("|"))
    assert "'tvm'" in reason
    assert accepted == "None"
    assert torch_imported == "False"


def test_get_compile_backend_walks_no_registry_and_changes_nothing(cpu, registry_walks) -> None:
    first = cpu.get_compile_backend()
    second = cpu.get_compile_backend()
    assert first == second == "inductor"
    assert registry_walks == []
