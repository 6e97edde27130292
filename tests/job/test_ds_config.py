"""The ds_config: found from the flag or the script's own arguments, read, and every bad shape named."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.errors import DsConfigError
from launcher.job.backend_order import DsConfigRef, find_ds_config, read_compile_backend


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--deepspeed_config", "a.json"], "a.json"),
        (["--deepspeed_config=b.json"], "b.json"),
        (["--lr", "1", "--deepspeed", "c.json"], "c.json"),
        (["--deepspeed", "--deepspeed_config", "d.json"], "d.json"),
        (["--deepspeed"], None),
        (["--", "--deepspeed_config", "e.json"], None),
    ],
)
def test_the_ds_config_is_found_in_script_arguments(args: list[str], expected: str | None) -> None:
    ref = find_ds_config(None, args)
    assert (ref.path if ref else None) == expected


def test_the_ds_config_flag_wins_over_script_arguments() -> None:
    assert find_ds_config("x.json", ["--deepspeed_config", "y.json"]) == DsConfigRef("x.json", "--ds-config")


@pytest.mark.parametrize(
    "content,problem",
    [
        ("", "is empty, expected a JSON object"),
        ("{\n  'compile': 1\n}", "not valid JSON: Expecting property name enclosed in double quotes at line 2 column 3"),
        ("[1, 2]", "must be a JSON object, got an array"),
        ('{"compile": "inductor"}', "'compile' must be an object, got a string"),
        ('{"compile": {"backend": 3}}', "'compile.backend' must be a string, got a number 3"),
        ('{"compile": {"backend": "  "}}', "'compile.backend' is empty"),
    ],
)
def test_a_bad_ds_config_is_an_error_that_says_what_is_wrong(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "ds.json"
    path.write_text(content)
    with pytest.raises(DsConfigError) as caught:
        read_compile_backend(DsConfigRef(str(path), "--ds-config"))
    assert str(caught.value) == f"ds_config {path} (from --ds-config): {problem}"
