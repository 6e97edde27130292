"""`accel-launch report`: what a launch on this machine would use, and why (docs/CONTRACT.md section 5).

The report resolves a launch exactly as `accel-launch` would (launcher.job.build_job) and shows it. When
that launch would be refused (a backend this accelerator does not support), the report still prints its
table, says so in the row of the backend, and ends with the launch's own error line and exit status 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from launcher.cli.error_exit import OneLineCommand, fail, fail_if_output_lost, fail_with
from launcher.cli.stacks import STACKS, STACKS_PROG, stacks_command
from launcher.cli.status import STATUS, STATUS_PROG, status_command
from launcher.contract.names import VALIDATION_STATUS
from launcher.contract.program import Program
from launcher.errors import LaunchError
from launcher.job.build_job import resolve_job
from launcher.job.options import LaunchOptions
from launcher.job.plan_table import format_plan
from launcher.job.validate import working_directory
from launcher.node.node_check import check_backend

__all__ = ["report_rows", "report_command", "WithReport", "REPORT_PROG"]

REPORT = "report"  # the subcommand: `accel-launch report` is `accel-report`
REPORT_PROG = "accel-report"

# The report has no program of its own; preparing a launch reads none.
_NO_PROGRAM = Program("script", "")


def report_rows(environ: dict[str, str], cwd: Path, compile_backend: str | None, ds_config: str | None,
                env_file: str | None, accelerator: str | None = None) -> tuple[list[tuple[str, str]], str | None]:
    """(label, value) rows of the report, and why a launch here would be refused (None: it would start);
    raises LaunchError on input that gives no launch to report."""
    options = LaunchOptions(_NO_PROGRAM, compile_backend=compile_backend, accelerator=accelerator,
                            ds_config=ds_config, env_file=env_file)
    job = resolve_job(options, environ, cwd, place=False)
    facts = job.accelerator
    try:
        check_backend(job.config.backend, facts, cwd)
        refusal, would_use = None, job.config.backend.describe()
    except LaunchError as exc:
        refusal, would_use = str(exc), f"nothing: {job.config.backend.describe()} would be refused"
    rows = [
        ("accelerator", facts.name),
        ("detected by", facts.detected_by),
        ("device count", str(facts.device_count)),
        ("torch", _torch_version()),
        ("communication backend", facts.communication_backend),
        ("default compile backend", facts.default_backend),
        ("supported compile backends", ", ".join(facts.supported_backends)),
        ("a launch here would use", would_use),
        (".env file", str(job.env_file) if job.env_file else "(none)"),
    ]
    return rows, refusal


def _torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "(not installed)"


@click.command(cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--compile-backend", "--compile_backend", "compile_backend", metavar="NAME",
              help="Resolve as if this flag were given to a launch.")
@click.option("--ds-config", "--ds_config", "ds_config", metavar="PATH", help="Resolve with this ds_config.")
@click.option("--env-file", "--env_file", "env_file", metavar="PATH", help="Use this env file instead of ./.env.")
@click.option("--accelerator", metavar="NAME", help="Report for this accelerator. Env: ACCEL_ACCELERATOR.")
def report_command(compile_backend: str | None, ds_config: str | None, env_file: str | None,
                   accelerator: str | None) -> None:
    """Print the accelerator, devices, torch, and the compile backend a launch here would resolve.

    Exit status 2 when such a launch would be refused (the last line says why), 1 when stdout is lost.
    """
    try:
        rows, refusal = report_rows(dict(os.environ), working_directory(), compile_backend, ds_config, env_file,
                                    accelerator)
    except LaunchError as exc:
        fail_with(REPORT_PROG, exc)
    click.echo("accel-launch report")
    click.echo(format_plan(rows))
    fail_if_output_lost(REPORT_PROG)  # before the refusal's line: a lost report is the first thing to say
    if refusal is not None:
        fail(REPORT_PROG, f"a launch here would be refused: {refusal}", VALIDATION_STATUS)


class WithReport(OneLineCommand):
    """A command whose first argument `report` runs the report instead (`accel-launch report ...` is
    `accel-report ...`), and `stacks` the stacks of a running job (launcher/cli/stacks.py), unless a file of
    that name is in the working directory: that is a script to launch, as it was before the subcommands existed.
    Not a click Group, whose help, usage line and PET_* variables would be its own: `accel-launch --help` stays
    the launch's, SCRIPT first."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **kwargs: Any) -> Any:
        """Run the report for `report ...`, the stacks for `stacks ...` (unless ./report, ./stacks exists), else
        this command."""
        argv = list(sys.argv[1:] if args is None else args)
        if argv[:1] == [REPORT] and not os.path.exists(REPORT):
            return report_command.main(argv[1:], prog_name=REPORT_PROG, **kwargs)
        if argv[:1] == [STACKS] and not os.path.exists(STACKS):
            return stacks_command.main(argv[1:], prog_name=STACKS_PROG, **kwargs)
        if argv[:1] == [STATUS] and not os.path.exists(STATUS):
            return status_command.main(argv[1:], prog_name=STATUS_PROG, **kwargs)
        return super().main(argv, prog_name=prog_name, **kwargs)
