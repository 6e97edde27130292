"""Each accelerator's identity and defaults, read from a directly instantiated object."""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

import pytest

import accelerators
import accelerators.accelerator as base
from accelerators import Accelerator, UnknownAcceleratorError, accelerator_class, known_accelerators
from accelerators.cpu import CPUAccelerator
from accelerators.cuda import CUDAAccelerator
from accelerators.hpu import HPUAccelerator
from accelerators.mps import MPSAccelerator
from accelerators.npu import NPUAccelerator
from accelerators.xpu import XPUAccelerator

DEFAULTS = [
    # class, device name, default compile backend, communication backend, visible-devices env var
    (CPUAccelerator, "cpu", "inductor", "gloo", None),
    (CUDAAccelerator, "cuda", "inductor", "nccl", "CUDA_VISIBLE_DEVICES"),
    (XPUAccelerator, "xpu", "inductor", "xccl", "ZE_AFFINITY_MASK"),
    (MPSAccelerator, "mps", "inductor", "gloo", None),
    (HPUAccelerator, "hpu", "hpu_backend", "hccl", "HABANA_VISIBLE_MODULES"),
    (NPUAccelerator, "npu", "npu", "hccl", "ASCEND_RT_VISIBLE_DEVICES"),
]


@pytest.mark.parametrize(("cls", "device", "compile_backend", "comm", "visible_env"), DEFAULTS)
def test_each_accelerator_starts_with_its_own_defaults(cls, device, compile_backend, comm, visible_env) -> None:
    acc = cls()
    assert acc.device_name() == device
    assert acc.get_compile_backend() == compile_backend
    assert acc.resolved_compile_backend() == compile_backend
    assert acc.communication_backend_name() == comm
    assert cls.visible_devices_env == visible_env


@pytest.mark.parametrize(("cls", "device", "compile_backend", "comm", "visible_env"), DEFAULTS)
def test_the_registry_finds_each_accelerator_by_name(cls, device, compile_backend, comm, visible_env) -> None:
    assert accelerator_class(device) is cls


def _device_classes() -> set[type[Accelerator]]:
    """Every accelerator class that a module of the accelerators package defines (a new device's file included)."""
    found = set()
    for module in pkgutil.iter_modules(accelerators.__path__):
        for value in vars(importlib.import_module(f"accelerators.{module.name}")).values():
            if isinstance(value, type) and issubclass(value, Accelerator) and value is not Accelerator:
                found.add(value)
    return found


def test_every_device_file_is_known_in_detection_order_vendors_first_and_cpu_last() -> None:
    """detect.py's `register` is the order (docs/ACCELERATORS.md): a vendor's package first, cpu the fallback."""
    known = base.registered()
    assert set(known) == _device_classes()
    assert known_accelerators() == tuple(cls.name for cls in known) and known[-1] is CPUAccelerator
    vendors = [cls.package is not None for cls in known]
    assert vendors == sorted(vendors, reverse=True), known


def test_an_unknown_accelerator_name_lists_the_known_ones() -> None:
    known = ", ".join(sorted(known_accelerators()))
    with pytest.raises(UnknownAcceleratorError, match=rf"^unknown accelerator 'foo'; known: {known}$"):
        accelerator_class("foo")


def test_cpu_has_no_rank_limit_and_one_rank_per_core_by_default() -> None:
    assert CPUAccelerator.is_available()
    assert CPUAccelerator.max_ranks_per_node() is None
    assert CPUAccelerator.default_nproc() == (os.cpu_count() or 1)
    assert CPUAccelerator.device_count() == (os.cpu_count() or 1)


@pytest.mark.parametrize("count", [1, 2, 8])
def test_a_device_accelerator_runs_one_rank_per_device(fake_devices, count: int) -> None:
    fake_devices({"cuda": count})
    assert CUDAAccelerator.max_ranks_per_node() == count
    assert CUDAAccelerator.default_nproc() == count


def test_absent_vendor_packages_report_no_devices_without_being_imported() -> None:
    import sys

    assert HPUAccelerator.device_count() == 0 and not HPUAccelerator.is_available()
    assert NPUAccelerator.device_count() == 0 and not NPUAccelerator.is_available()
    assert "habana_frameworks" not in sys.modules and "torch_npu" not in sys.modules


def test_a_vendor_device_is_counted_by_its_module_once_its_package_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vendor = tmp_path / "accel_test_vendor"
    vendor.mkdir()
    (vendor / "__init__.py").write_text("")
    (vendor / "devices.py").write_text("def is_available():\n    return True\n\n\ndef device_count():\n    return 3\n")

    class VendorAccelerator(Accelerator):
        name = "vendor"
        default_compile_backend = "eager"
        communication_backend = "gloo"
        package = "accel_test_vendor"
        device_module = "accel_test_vendor.devices"

    assert VendorAccelerator.device_count() == 0 and not VendorAccelerator.is_available()
    assert VendorAccelerator.unavailable_reason() == "the package 'accel_test_vendor' is not installed"
    monkeypatch.syspath_prepend(str(tmp_path))
    assert VendorAccelerator.device_count() == 3 and VendorAccelerator.is_available()


def test_a_name_registered_twice_is_refused_and_the_table_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "ACCELERATORS", dict(base.ACCELERATORS))
    before = base.known_accelerators()
    with pytest.raises(ValueError, match="^accelerator 'cpu' is registered twice$"):
        base.register(CPUAccelerator)
    assert base.known_accelerators() == before
