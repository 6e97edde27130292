"""The resolver itself: a named ds_config is read whatever wins, the default is computed only when needed,
and a blank flag is a usage error (any mix of levels: test_backend_properties.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.errors import DsConfigError, UsageError
from launcher.job.backend_order import DsConfigRef, resolve_backend


def test_a_missing_ds_config_is_an_error_even_when_a_higher_level_wins(tmp_path: Path) -> None:
    with pytest.raises(DsConfigError, match="no such file"):
        resolve_backend("eager", {}, {}, DsConfigRef(str(tmp_path / "nope.json"), "--ds-config"), lambda: "inductor")


def test_a_ds_config_without_compile_section_falls_through_to_the_default(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_batch_size": 8}))
    resolved = resolve_backend(None, {}, {}, DsConfigRef(str(path), "--ds-config"), lambda: "inductor")
    assert (resolved.name, resolved.source) == ("inductor", "accelerator default")


def test_the_default_is_only_computed_when_it_is_needed() -> None:
    def default() -> str:
        raise AssertionError("the accelerator default was computed although the flag won")

    assert resolve_backend("eager", {}, {}, None, default).name == "eager"


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_compile_backend_flag_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="--compile-backend"):
        resolve_backend(value, {}, {}, None, lambda: "inductor")
