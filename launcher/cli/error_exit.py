"""How the console scripts end on an error: one line on stderr, whatever the user typed, and a status.

Every `PROG: error: ...` line goes through `fail`, which shows user text with its control characters
escaped (`launcher.escaped`: a newline in a file name is `\\n`, never a second line), and every click
usage error of `accel-launch` and `accel-report` becomes such a line through `OneLineCommand`, whose parser
takes long options by prefix.
"""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

import click

from launcher.cli.long_prefixes import PrefixParser
from launcher.cli.std_streams import lost_output
from launcher.contract.names import FAILURE_STATUS, SIGNAL_STATUS_BASE
from launcher.errors import LaunchError
from launcher.escaped import one_line

__all__ = ["OneLineCommand", "fail", "fail_with", "fail_if_output_lost"]


def fail(prog: str, message: str, status: int) -> NoReturn:
    """Write `PROG: error: MESSAGE` as one line on stderr and exit with `status`."""
    click.echo(f"{prog}: error: {one_line(message)}", err=True)
    sys.exit(status)


def fail_with(prog: str, error: LaunchError) -> NoReturn:
    """`error` as its one line, and its own exit status."""
    fail(prog, str(error), error.exit_status)


def fail_if_output_lost(prog: str) -> None:
    """One line and FAILURE_STATUS, as coreutils exit, when what was written to stdout was lost (a full disk, an
    I/O error)."""
    problem = lost_output()
    if problem is not None:
        fail(prog, f"cannot write to stdout: {problem}", FAILURE_STATUS)


class OneLineCommand(click.Command):
    """A command whose usage errors are one line, `PROG: error: ...`, with exit status 2, and whose output
    (help, a plan, a report) lost on stdout is one line with exit status 1. Its long options may be given
    by unambiguous prefix, as argparse takes them (launcher.cli.long_prefixes)."""

    def make_parser(self, ctx: click.Context) -> PrefixParser:
        """click's parser for this command's options, with long options taken by prefix."""
        parser = PrefixParser(ctx)
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser

    def main(self, *args: object, standalone_mode: bool = True, **kwargs: object) -> object:
        """Run the command; a usage error is one line on stderr, never click's usage block."""
        prog = str(kwargs.get("prog_name") or self.name)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            fail(prog, " ".join(exc.format_message().split()), exc.exit_code)  # click's own status: 2 for usage
        except click.exceptions.Abort:
            sys.exit(SIGNAL_STATUS_BASE + signal.SIGINT)  # Ctrl-C before any rank started
        fail_if_output_lost(prog)
        return status
