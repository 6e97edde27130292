"""How the console scripts end on an error: one line on stderr, whatever the user typed, and a status.

Every `PROG: error: ...` line goes through `fail`, which shows user text with its control characters
escaped (`launcher.escaped`: a newline in a file name is `\\n`, never a second line), and every click
usage error of `accel-launch` and `accel-report` becomes such a line through `OneLineCommand`.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from launcher.escaped import one_line
from launcher.cli.std_streams import lost_output

__all__ = ["OneLineCommand", "fail", "fail_if_output_lost", "USAGE_STATUS", "WRITE_ERROR_STATUS"]

USAGE_STATUS = 2
# A plan or report that could not be written to stdout (a full disk, an I/O error), as coreutils exit.
WRITE_ERROR_STATUS = 1


def fail(prog: str, message: str, status: int = USAGE_STATUS) -> NoReturn:
    """Write `PROG: error: MESSAGE` as one line on stderr and exit with `status`."""
    click.echo(f"{prog}: error: {one_line(message)}", err=True)
    sys.exit(status)


def fail_if_output_lost(prog: str) -> None:
    """One line and WRITE_ERROR_STATUS when what was written to stdout was lost (a full disk, an I/O error)."""
    problem = lost_output()
    if problem is not None:
        fail(prog, f"cannot write to stdout: {problem}", WRITE_ERROR_STATUS)


class OneLineCommand(click.Command):
    """A command whose usage errors are one line, `PROG: error: ...`, with exit status 2, and whose output
    (help, a plan, a report) lost on stdout is one line with exit status 1."""

    def main(self, *args: object, standalone_mode: bool = True, **kwargs: object) -> object:
        """Run the command; a usage error is one line on stderr, never click's usage block."""
        prog = str(kwargs.get("prog_name") or self.name)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            fail(prog, " ".join(exc.format_message().split()))
        except click.exceptions.Abort:
            sys.exit(130)  # Ctrl-C before any rank started
        fail_if_output_lost(prog)
        return status
