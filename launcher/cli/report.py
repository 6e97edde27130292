"""`accel-launch report`: what a launch on this machine would use, and why (docs/CONTRACT.md section 5).

The report resolves a launch exactly as `accel-launch` would (launcher.prepare.job) and shows it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from launcher.errors import LaunchError
from launcher.prepare.config import LaunchOptions, Program
from launcher.prepare.job import resolve_job
from launcher.prepare.plan import format_plan

__all__ = ["report_rows", "report_command"]

# The report has no program of its own; preparing a launch reads none.
_NO_PROGRAM = Program("script", "")


def report_rows(environ: dict[str, str], cwd: Path, compile_backend: str | None, ds_config: str | None,
                env_file: str | None, accelerator: str | None = None) -> list[tuple[str, str]]:
    """(label, value) rows of the report; raises LaunchError or ValueError on bad input."""
    options = LaunchOptions(_NO_PROGRAM, compile_backend=compile_backend, accelerator=accelerator,
                            ds_config=ds_config, env_file=env_file)
    job = resolve_job(options, environ, cwd, place=False)
    facts = job.accelerator
    return [
        ("accelerator", facts.name),
        ("detected by", facts.detected_by),
        ("device count", str(facts.device_count)),
        ("torch", _torch_version()),
        ("communication backend", facts.communication_backend),
        ("default compile backend", facts.default_backend),
        ("supported compile backends", ", ".join(facts.supported_backends)),
        ("a launch here would use", job.config.backend.describe()),
        (".env file", str(job.env_file) if job.env_file else "(none)"),
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
    try:
        rows = report_rows(dict(os.environ), Path.cwd(), compile_backend, ds_config, env_file, accelerator)
    except (LaunchError, ValueError) as exc:
        click.echo(f"accel-report: error: {exc}", err=True)
        sys.exit(2)
    click.echo("accel-launch report")
    click.echo(format_plan(rows))
