"""Finding a DeepSpeed-style ds_config and reading its `compile.backend`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from launcher.errors import DsConfigError
from launcher.shared_files import UnsafeFileError, read_user_text

__all__ = ["DsConfigRef", "find_ds_config", "read_compile_backend"]

# The script arguments that DeepSpeed programs use to name their config file.
_SCRIPT_FLAGS = ("--deepspeed_config", "--deepspeed-config", "--deepspeed")
# A ds_config is a few kB; anything near this is not one.
_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class DsConfigRef:
    """A ds_config path and how it was found (`--ds-config`, or the script's own flag)."""

    path: str
    found_via: str


def find_ds_config(cli_path: str | None, script_args: Sequence[str]) -> DsConfigRef | None:
    """`--ds-config` wins; else the first `--deepspeed_config PATH`, `--deepspeed_config=PATH` or
    `--deepspeed PATH` among the script's arguments (a bare `--deepspeed` switch names no file)."""
    if cli_path is not None:
        return DsConfigRef(cli_path, "--ds-config")
    for index, arg in enumerate(script_args):
        if arg == "--":
            break
        flag, has_value, value = arg.partition("=")
        if flag not in _SCRIPT_FLAGS:
            continue
        if has_value:
            return DsConfigRef(value, f"script argument {flag}")
        following = script_args[index + 1] if index + 1 < len(script_args) else None
        if following is not None and not following.startswith("-"):
            return DsConfigRef(following, f"script argument {flag}")
    return None


def read_compile_backend(ref: DsConfigRef) -> str | None:
    """The `compile.backend` string of the config, or None when the config sets none."""
    data = _load_object(ref)
    section = data.get("compile")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise DsConfigError(ref.path, f"'compile' must be an object, got {_json_type(section)}", ref.found_via)
    backend = section.get("backend")
    if backend is None:
        return None
    if not isinstance(backend, str):
        raise DsConfigError(
            ref.path, f"'compile.backend' must be a string, got {_json_type(backend)} {backend!r}", ref.found_via
        )
    if not backend.strip():
        raise DsConfigError(ref.path, "'compile.backend' is empty", ref.found_via)
    return backend


def _load_object(ref: DsConfigRef) -> dict:
    try:
        text = read_user_text(ref.path, _MAX_BYTES)
    except UnsafeFileError as exc:
        raise DsConfigError(ref.path, str(exc), ref.found_via) from None
    if not text.strip():
        raise DsConfigError(ref.path, "is empty, expected a JSON object", ref.found_via)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DsConfigError(
            ref.path, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", ref.found_via
        ) from None
    except RecursionError:
        raise DsConfigError(ref.path, "is nested too deeply to be a ds_config", ref.found_via) from None
    except ValueError as exc:  # a number longer than Python reads (sys.get_int_max_str_digits)
        raise DsConfigError(ref.path, f"holds a number too long to read: {str(exc).split(';')[0]}",
                            ref.found_via) from None
    if not isinstance(data, dict):
        raise DsConfigError(ref.path, f"must be a JSON object, got {_json_type(data)}", ref.found_via)
    return data


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")
