"""`accel-launch report`: what a launch on this machine would use, and why (CONTRACT.md section 5)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from launcher.resolve.node_facts import accelerator_facts
from launcher.resolve.ds_config import find_ds_config
from launcher.resolve.envfile import default_env_file, read_env_file
from launcher.errors import LaunchError
from launcher.prepare.plan import format_plan
from launcher.run.rank_env import ACCELERATOR_VAR
from launcher.resolve.backend import resolve_backend

__all__ = ["report_rows", "report_command"]


def report_rows(environ: dict[str, str], cwd: Path, compile_backend: str | None, ds_config: str | None,
                env_file: str | None) -> list[tuple[str, str]]:
    """(label, value) rows of the report; raises LaunchError or ValueError on bad input."""
    path = Path(env_file) if env_file else default_env_file(cwd)
    file_values = read_env_file(path) if path else {}
    accelerator = accelerator_facts({**file_values, **environ})
    resolved = resolve_backend(
        compile_backend, environ, file_values, find_ds_config(ds_config, ()),
        lambda: accelerator.default_backend,
    )
    return [
        ("accelerator", accelerator.name),
        ("detected by", accelerator.detected_by),
        ("device count", str(accelerator.device_count)),
        ("torch", _torch_version()),
        ("communication backend", accelerator.communication_backend),
        ("default compile backend", accelerator.default_backend),
        ("supported compile backends", ", ".join(accelerator.supported_backends)),
        ("a launch here would use", resolved.describe()),
        (".env file", str(path) if path else "(none)"),
    ]


def _torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "(not installed)"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--compile-backend", "--compile_backend", "compile_backend", metavar="NAME",
              help="Resolve as if this flag were given to a launch.")
@click.option("--ds-config", "--ds_config", "ds_config", metavar="PATH", help="Resolve with this ds_config.")
@click.option("--env-file", "--env_file", "env_file", metavar="PATH", help="Use this env file instead of ./.env.")
@click.option("--accelerator", metavar="NAME", help="Report for this accelerator. Env: ACCEL_ACCELERATOR.")
def report_command(compile_backend: str | None, ds_config: str | None, env_file: str | None,
                   accelerator: str | None) -> None:
    """Print the accelerator, devices, torch, and the compile backend a launch here would resolve."""
    environ = dict(os.environ)
    if accelerator is not None:
        environ[ACCELERATOR_VAR] = accelerator
    try:
        rows = report_rows(environ, Path.cwd(), compile_backend, ds_config, env_file)
    except (LaunchError, ValueError) as exc:
        click.echo(f"accel-report: error: {exc}", err=True)
        sys.exit(2)
    click.echo("accel-launch report")
    click.echo(format_plan(rows))
