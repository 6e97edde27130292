"""Resolving the ONE compile backend of a launch, and where it came from (docs/CONTRACT.md section 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.names import ACCELERATOR_KEYWORD, BACKEND_VAR, DEFAULT_SOURCE
from launcher.errors import UsageError
from launcher.resolve.ds_config import DsConfigRef, read_compile_backend

__all__ = ["resolve_backend"]


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
