"""transformers' TrainingArguments: an unset torch_compile_backend becomes the resolved one, a set one stays, and
without transformers nothing is watched or imported (real transformers, in-process)."""

from __future__ import annotations

import sys

import pytest

from accelerators.cpu import CPUAccelerator
from launcher.rank import library_bridges


@pytest.fixture
def training_args(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 (transformers' module)
    """transformers.training_args with the bridge's wrapper on, its own __post_init__ back afterwards."""
    from transformers import training_args

    monkeypatch.setattr(training_args.TrainingArguments, "__post_init__",
                        training_args.TrainingArguments.__post_init__)
    accelerator = CPUAccelerator()
    accelerator.set_compile_backend("aot_eager")
    library_bridges._fill_unset_backend(training_args, accelerator)
    return training_args


@pytest.mark.parametrize("given, expected", [
    ({"torch_compile": True}, "aot_eager"),
    ({"torch_compile_mode": "default"}, "aot_eager"),
    ({"torch_compile": True, "torch_compile_backend": "eager"}, "eager"),
    ({}, None),
])
def test_only_an_unset_backend_of_a_compiling_trainer_becomes_the_resolved_one(training_args, tmp_path,  # noqa: ANN001
                                                                               given, expected) -> None:
    arguments = training_args.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[], **given)
    assert arguments.torch_compile_backend == expected


def test_without_transformers_nothing_is_watched_or_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[str] = []
    monkeypatch.setattr(library_bridges, "package_installed", lambda name: False)
    monkeypatch.setattr(library_bridges, "after_import", lambda name, callback: watched.append(name))
    before = {name for name in sys.modules if name.startswith("transformers")}
    library_bridges.bridge_transformers(CPUAccelerator())
    assert watched == [] and {name for name in sys.modules if name.startswith("transformers")} == before
