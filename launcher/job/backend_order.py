"""Resolving the ONE compile backend of a launch, and where it came from (docs/CONTRACT.md section 2): the flag,
`ACCEL_COMPILE_BACKEND`, a DeepSpeed-style ds_config's `compile.backend` (found and read here), then the
accelerator's default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from launcher.contract.names import ACCELERATOR_KEYWORD, BACKEND_VAR, DEFAULT_SOURCE
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.errors import DsConfigError, UsageError
from launcher.shared_files import UnsafeFileError, read_user_text

__all__ = ["resolve_backend", "DsConfigRef", "find_ds_config", "read_compile_backend"]


def resolve_backend(
    cli_value: str | None,
    process_env: Mapping[str, str],
    env_file: Mapping[str, str],
    ds_config: DsConfigRef | None,
    accelerator_default: Callable[[], str],
    env_file_path: str = ".env",
) -> ResolvedBackend:
    """The first level that gives a value wins: flag, env var (process, then .env), ds_config, default.

    `accelerator_default` is only called when the default is needed, so that resolution stays cheap. A value
    from the env file names it (`env_file_path`) in its source: `ACCEL_COMPILE_BACKEND in /path/.env`.
    """
    if cli_value is not None and not cli_value.strip():
        raise UsageError("--compile-backend", cli_value, "give a backend name, or leave the flag out")
    # A ds_config that was named is read even when a higher level wins: a broken file is reported now.
    ds_value = read_compile_backend(ds_config) if ds_config is not None else None
    levels = (
        (cli_value, "--compile-backend"),
        (_set(process_env), BACKEND_VAR),
        (_set(env_file), f"{BACKEND_VAR} in {env_file_path}"),
        (ds_value, f"ds_config {ds_config.path}" if ds_config is not None else ""),
    )
    for value, source in levels:
        if value is None:
            continue
        name = accelerator_default() if value == ACCELERATOR_KEYWORD else value
        return ResolvedBackend(name=name, source=source, requested=value)
    default = accelerator_default()
    return ResolvedBackend(name=default, source=DEFAULT_SOURCE, requested=default)


def _set(environ: Mapping[str, str]) -> str | None:
    """The backend variable of `environ`, unless absent or blank."""
    value = environ.get(BACKEND_VAR)
    return value if value is not None and value.strip() else None


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
