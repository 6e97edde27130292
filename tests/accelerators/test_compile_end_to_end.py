"""The stored backend really drives torch.compile, with the right numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch


def scaled_sum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A tiny function to compile."""
    return (x * 2 + y).sin().sum()


def test_eager_set_then_compiled_gives_the_right_numbers(cpu) -> None:
    cpu.set_compile_backend("eager")
    compiled = torch.compile(scaled_sum, backend=cpu.get_compile_backend())
    x, y = torch.arange(4.0), torch.ones(4)
    torch.testing.assert_close(compiled(x, y), scaled_sum(x, y))


@pytest.mark.slow
def test_inductor_compiles_and_runs_on_cpu(cpu) -> None:
    assert cpu.get_compile_backend() == "inductor"
    compiled = torch.compile(lambda x: torch.relu(x) * 3 - 1, backend=cpu.get_compile_backend())
    x = torch.linspace(-2, 2, 9)
    torch.testing.assert_close(compiled(x), torch.relu(x) * 3 - 1)


def test_an_import_path_backend_is_the_one_that_compiles(cpu, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "accel_counting_backend.py").write_text(
        "GRAPHS = []\n\ndef backend(gm, example_inputs):\n    GRAPHS.append(gm)\n    return gm.forward\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "accel_counting_backend", raising=False)
    cpu.set_compile_backend("accel_counting_backend:backend")
    compiled = torch.compile(lambda x: x.cos() + 1, backend=cpu.resolved_compile_backend())
    x = torch.arange(3.0)
    torch.testing.assert_close(compiled(x), x.cos() + 1)
    assert len(sys.modules["accel_counting_backend"].GRAPHS) == 1
