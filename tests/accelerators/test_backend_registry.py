"""The supported list: dynamo's real registry, filtered per device, cached, and open to late registrations."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import torch._dynamo

from accelerators import get_accelerator
from accelerators.cuda import CUDAAccelerator

ENTRY_POINT_CHECK = """
from accelerators import get_accelerator
acc = get_accelerator()
listed = 'accel_ep_backend' in acc.supported_compile_backends()
acc.set_compile_backend('accel_ep_backend')
import torch
fn = torch.compile(lambda x: x * 3 + 1, backend=acc.get_compile_backend())
import accel_ep_module
print(listed, acc.get_compile_backend(), fn(torch.tensor([1.0, 2.0])).tolist(), accel_ep_module.CALLS)
"""


def make_entry_point_distribution(root: Path) -> Path:
    """A tiny installed distribution whose entry point registers backend 'accel_ep_backend'."""
    (root / "accel_ep_module.py").write_text(
        "CALLS = []\n\ndef backend(gm, example_inputs):\n    CALLS.append(1)\n    return gm.forward\n"
    )
    dist_info = root / "accel_ep_dist-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: accel-ep-dist\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[torch_dynamo_backends]\naccel_ep_backend = accel_ep_module:backend\n")
    return root


def test_the_supported_list_is_sorted_and_excludes_testing_and_minifier_backends(cpu) -> None:
    supported = cpu.supported_compile_backends()
    assert list(supported) == sorted(supported)
    assert {"eager", "aot_eager", "inductor"} <= set(supported)
    assert not [name for name in supported if name.endswith("_TESTING_ONLY") or "minifier" in name]


def test_the_second_call_does_not_walk_the_registry_again(cpu, registry_walks) -> None:
    first = cpu.supported_compile_backends()
    second = cpu.supported_compile_backends()
    cpu.set_compile_backend("eager")
    assert first is second
    assert registry_walks == ["walk"]


def test_each_accelerator_object_computes_its_own_list(cpu, registry_walks) -> None:
    cpu.supported_compile_backends()
    type(cpu)().supported_compile_backends()
    assert registry_walks == ["walk", "walk"]


def test_a_backend_registered_after_the_list_was_cached_is_accepted(cpu, registry_walks) -> None:
    cpu.supported_compile_backends()
    name = f"accel_late_{uuid.uuid4().hex[:8]}"
    torch._dynamo.register_backend(lambda gm, example_inputs: gm.forward, name=name)
    cpu.set_compile_backend(name)
    assert cpu.get_compile_backend() == name
    assert name in cpu.supported_compile_backends()
    assert registry_walks == ["walk", "walk"]


def test_a_refused_name_walks_the_live_registry_only_once_more(cpu, registry_walks) -> None:
    cpu.supported_compile_backends()
    try:
        cpu.set_compile_backend("accel_never_registered")
    except ValueError:
        pass
    assert registry_walks == ["walk", "walk"]


@pytest.mark.slow
def test_an_entry_point_backend_is_listed_and_accepted(run_python, tmp_path: Path) -> None:
    out = run_python(ENTRY_POINT_CHECK, pythonpath=make_entry_point_distribution(tmp_path))
    assert out.split() == ["True", "accel_ep_backend", "[4.0,", "7.0]", "[1]"]


def test_cudagraphs_is_refused_on_cpu(cpu) -> None:
    assert "cudagraphs" in torch._dynamo.list_backends(exclude_tags=())
    assert "cudagraphs" not in cpu.supported_compile_backends()


def test_cudagraphs_is_accepted_on_a_faked_cuda(fake_devices, monkeypatch) -> None:
    fake_devices({"cuda": 2})
    monkeypatch.setenv("ACCEL_ACCELERATOR", "cuda")
    acc = get_accelerator()
    assert isinstance(acc, CUDAAccelerator)
    acc.set_compile_backend("cudagraphs")
    assert acc.get_compile_backend() == "cudagraphs"
    assert "cudagraphs" in acc.supported_compile_backends()
