"""Where DeepSpeed is not installed, the rank's DeepSpeed integration watches nothing and imports nothing."""

from __future__ import annotations

import sys

import pytest

from accelerators.cpu import CPUAccelerator
from launcher.rank import library_bridges


def test_without_deepspeed_the_bridge_arranges_no_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[str] = []
    monkeypatch.setattr(library_bridges, "package_installed", lambda name: name != "deepspeed")
    monkeypatch.setattr(library_bridges, "after_import", lambda name, callback: watched.append(name))
    before = {name for name in sys.modules if name.startswith("deepspeed")}
    library_bridges.bridge_deepspeed(CPUAccelerator())
    assert watched == []
    assert {name for name in sys.modules if name.startswith("deepspeed")} == before


def test_with_deepspeed_the_bridge_watches_its_accelerator_and_compile_config(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[str] = []
    monkeypatch.setattr(library_bridges, "package_installed", lambda name: True)
    monkeypatch.setattr(library_bridges, "after_import", lambda name, callback: watched.append(name))
    library_bridges.bridge_deepspeed(CPUAccelerator())
    assert sorted(watched) == ["deepspeed.accelerator.real_accelerator", "deepspeed.compile.config",
                              "deepspeed.runtime.engine"]
