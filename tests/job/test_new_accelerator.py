"""A new device is one class and one registry line: detected, reported, and its backend rules applied by the
launcher's fast check, with nothing to change in launcher/ (docs/ACCELERATORS.md, "Adding an accelerator")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import launcher
import accelerators.accelerator as base
from accelerators.accelerator import Accelerator
from accelerators.detect import detect_accelerator, detect_from_build
from accelerators.torch_build import torch_build
from launcher.cli.report import report_rows
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.errors import BackendRefusedError
from launcher.node.node_check import accelerator_facts, check_backend
from tests.launches import RECORD_RANK, CliRunnerFn

EXCLUSIVE = "fakedev_graphs"


class FakeDevAccelerator(Accelerator):
    """A device that exists only in this test: two of them, and one backend no other device may run."""

    name = "fakedev"
    default_compile_backend = "eager"
    communication_backend = "gloo"
    visible_devices_env = "FAKEDEV_VISIBLE_DEVICES"
    exclusive_backends = (EXCLUSIVE,)
    nproc_word = "fakedev"

    @classmethod
    def is_available(cls) -> bool:
        return True

    @classmethod
    def device_count(cls) -> int:
        return 2


@pytest.fixture
def fakedev(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The one registry line, first in detection order; its backend registered with dynamo; a private cache."""
    import torch._dynamo

    if EXCLUSIVE not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(compiler_fn=lambda gm, example_inputs: gm.forward, name=EXCLUSIVE)
    monkeypatch.setattr(base, "ACCELERATORS", {"fakedev": FakeDevAccelerator, **base.ACCELERATORS})
    yield {"XDG_CACHE_HOME": str(tmp_path)}


def test_the_new_device_is_detected_first_and_known_by_name(fakedev) -> None:
    assert detect_accelerator(fakedev) == (FakeDevAccelerator, "detected: fakedev available, 2 devices")
    assert base.accelerator_class("fakedev") is FakeDevAccelerator
    assert "fakedev" in base.known_accelerators()
    assert detect_from_build(fakedev, torch_build()) is None  # never ruled out: the fast path cannot answer cpu


def test_the_launcher_sees_its_facts_and_applies_its_backend_rules(fakedev) -> None:
    facts = accelerator_facts(fakedev)
    assert (facts.name, facts.device_count, facts.default_backend) == ("fakedev", 2, "eager")
    assert EXCLUSIVE in facts.supported_backends
    check_backend(ResolvedBackend(EXCLUSIVE, "--compile-backend", EXCLUSIVE), facts)
    on_cpu = accelerator_facts({**fakedev, "ACCEL_ACCELERATOR": "cpu"})
    assert EXCLUSIVE not in on_cpu.supported_backends
    with pytest.raises(BackendRefusedError, match=f"'{EXCLUSIVE}' .*runs only on fakedev"):
        check_backend(ResolvedBackend(EXCLUSIVE, "--compile-backend", EXCLUSIVE), on_cpu)


def test_the_report_lists_the_new_device(fakedev, tmp_path: Path) -> None:
    rows = dict(report_rows(fakedev, tmp_path, None, None, None)[0])
    assert rows["accelerator"] == "fakedev"
    assert rows["device count"] == "2"
    assert rows["a launch here would use"] == "eager (from accelerator default)"


def test_the_launcher_counts_places_and_limits_ranks_by_its_class(fakedev, cli: CliRunnerFn) -> None:
    by_word = cli(["--dry-run", "--nproc-per-node", "fakedev", str(RECORD_RANK)], env=fakedev)
    assert "ranks per node  : 2" in by_word.stdout, by_word.stderr
    placed = cli(["--dry-run", "--num_gpus", "1", str(RECORD_RANK)], env=fakedev)
    assert "environment     : FAKEDEV_VISIBLE_DEVICES=0" in placed.stdout, placed.stderr
    too_many = cli(["--nproc-per-node", "3", str(RECORD_RANK)], env=fakedev)
    assert too_many.status == 2
    assert "invalid value for --nproc-per-node: '3' (fakedev has 2 devices here)" in too_many.stderr


def test_the_launcher_spells_no_device_fact_of_its_own() -> None:
    """What the launcher knows of a device it reads from the class: no name, word, variable or package in its code."""
    facts = set()
    for cls in base.registered():
        facts |= {cls.name, cls.nproc_word, cls.visible_devices_env, cls.package, *cls.exclusive_backends} - {None}
    spelled = []
    for path in Path(launcher.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        spelled += [f"{path.name}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and node.value in facts]
    assert "cuda" in facts and "CUDA_VISIBLE_DEVICES" in facts
    assert spelled == []
