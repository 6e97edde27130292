"""Which accelerator a process gets: the ACCEL_ACCELERATOR override, else the detection order."""

from __future__ import annotations

import pytest

from accelerators import (
    AcceleratorUnavailableError,
    UnknownAcceleratorError,
    detect_accelerator,
    get_accelerator,
    known_accelerators,
)

# Every known device but cpu, the fallback that is always available (accelerators/detect.py's `register`).
DEVICES = [name for name in known_accelerators() if name != "cpu"]

DETECTION_ORDER = [
    # devices faked present, expected accelerator, how
    ({"hpu": 8, "cuda": 2}, "hpu", "detected: hpu available, 8 devices"),
    ({"npu": 4, "cuda": 2, "xpu": 1}, "npu", "detected: npu available, 4 devices"),
    ({"hpu": 1, "npu": 1}, "hpu", "detected: hpu available, 1 device"),
    ({"cuda": 2, "xpu": 1, "mps": 1}, "cuda", "detected: cuda available, 2 devices"),
    ({"xpu": 3, "mps": 1}, "xpu", "detected: xpu available, 3 devices"),
    ({"mps": 1}, "mps", "detected: mps available, 1 device"),
    ({}, "cpu", "fallback: no accelerator found"),
]

OVERRIDES = [
    # ACCEL_ACCELERATOR, devices faked present, expected accelerator
    ("cpu", {"cuda": 2}, "cpu"),
    (" CUDA ", {"cuda": 2, "hpu": 8}, "cuda"),
    ("xpu", {"xpu": 1, "cuda": 1}, "xpu"),
    ("", {"cuda": 1}, "cuda"),
    ("   ", {}, "cpu"),
]


@pytest.mark.parametrize(("present", "expected", "how"), DETECTION_ORDER)
def test_detection_takes_the_first_available_in_order(fake_devices, present, expected, how) -> None:
    fake_devices(present)
    cls, reason = detect_accelerator({})
    assert (cls.name, reason) == (expected, how)


@pytest.mark.parametrize(("override", "present", "expected"), OVERRIDES)
def test_accel_accelerator_wins_over_detection_and_blank_counts_as_unset(fake_devices, override, present, expected) -> None:
    fake_devices(present)
    cls, how = detect_accelerator({"ACCEL_ACCELERATOR": override})
    assert cls.name == expected
    assert how.startswith("ACCEL_ACCELERATOR=") == bool(override.strip())


def test_an_unknown_override_lists_the_known_accelerators() -> None:
    known = ", ".join(sorted(known_accelerators()))
    with pytest.raises(UnknownAcceleratorError, match=rf"^unknown accelerator 'tpu'; known: {known}$"):
        detect_accelerator({"ACCEL_ACCELERATOR": "tpu"})


@pytest.mark.parametrize("name", DEVICES)
def test_a_known_but_unavailable_override_says_so(fake_devices, name: str) -> None:
    fake_devices({})
    with pytest.raises(AcceleratorUnavailableError, match=rf"^accelerator '{name}' is not available here \(.+\)$"):
        detect_accelerator({"ACCEL_ACCELERATOR": name})


def test_detection_reads_the_mapping_it_is_given_not_os_environ(fake_devices, monkeypatch) -> None:
    fake_devices({"cuda": 1})
    monkeypatch.setenv("ACCEL_ACCELERATOR", "cpu")
    assert detect_accelerator({})[0].name == "cuda"


def test_get_accelerator_detects_once_per_process(fake_devices, monkeypatch) -> None:
    fake_devices({"cuda": 2})
    monkeypatch.setenv("ACCEL_ACCELERATOR", "cuda")
    first = get_accelerator()
    monkeypatch.setenv("ACCEL_ACCELERATOR", "cpu")
    assert get_accelerator() is first
    assert first.device_name() == "cuda"
