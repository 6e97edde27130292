"""The pure parts: .env reading, ds_config lookup and reading, and the resolver itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.resolve.ds_config import DsConfigRef, find_ds_config, read_compile_backend
from launcher.resolve.envfile import read_env_file
from launcher.errors import DsConfigError, EnvFileError, UsageError
from launcher.resolve.backend import resolve_backend


def test_env_file_values_are_read_without_running_anything(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=1\nexport B='two words'\n# comment\nC=$(touch {})\n".format(tmp_path / "x"))
    assert read_env_file(path) == {"A": "1", "B": "two words", "C": f"$(touch {tmp_path / 'x'})"}
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("line", ["A B=1", "=value", "'unterminated"])
def test_a_malformed_env_line_names_file_and_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / ".env"
    path.write_text(f"GOOD=1\n{line}\n")
    with pytest.raises(EnvFileError, match=rf"{path}:2: not a NAME=value line"):
        read_env_file(path)


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
