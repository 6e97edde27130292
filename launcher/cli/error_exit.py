"""How the console scripts end on an error: one line on stderr, whatever the user typed, and a status.

Every `PROG: error: ...` line goes through `fail`, which shows user text with its control characters
escaped (`launcher.escaped`: a newline in a file name is `\\n`, never a second line), and every click
usage error of `accel-launch` and `accel-report` becomes such a line through `OneLineCommand`.

Its parser takes long options by unambiguous prefix, as argparse takes them (torchrun's and DeepSpeed's parsers
do): `--redirect 3` is `--redirects 3`, `--nproc_per 2` is `--nproc_per_node 2`. Only the command's own options
are expanded: click stops reading options at the script's name, so nothing after it is ever looked at here. A
prefix of several options is one usage error listing them, and an unknown option's did-you-mean lists the
closest names first (docs/FLAGS.md).
"""

from __future__ import annotations

import signal
import sys
from difflib import get_close_matches
from typing import Any, NoReturn

import click

from launcher.cli.std_streams import lost_output
from launcher.contract.names import FAILURE_STATUS, SIGNAL_STATUS_BASE
from launcher.errors import LaunchError
from launcher.escaped import one_line

try:  # click 8.2 and later
    from click.parser import _OptionParser
except ImportError:  # click 8.1, which setup.py allows
    from click.parser import OptionParser as _OptionParser

__all__ = ["OneLineCommand", "fail", "fail_with", "fail_if_output_lost", "PrefixParser", "expand_prefix"]


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
    by unambiguous prefix, as argparse takes them (`PrefixParser`)."""

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


def expand_prefix(typed: str, known: dict[str, Any]) -> str:
    """The long option `typed` names among `known` (option string -> option): itself when known, else the
    one option it is a prefix of. Both spellings of one option (`--nproc-per-node`, `--nproc_per_node`) are
    one option. Raises click.UsageError when it is a prefix of several, and NoSuchOption when of none."""
    if typed in known or not typed.startswith("--") or len(typed) < 3:
        return typed
    matches = [name for name in known if name.startswith(typed)]
    options = {id(known[name]) for name in matches}
    if len(options) == 1:
        return matches[0]
    if matches:
        raise click.UsageError(f"ambiguous option: {typed} could match {', '.join(sorted(matches))}")
    raise ClosestFirst(typed, known)


class ClosestFirst(click.NoSuchOption):
    """click's NoSuchOption whose did-you-mean lists the closest names first (click sorts them by name)."""

    def __init__(self, typed: str, known: dict[str, Any]) -> None:
        super().__init__(typed)
        self.closest = get_close_matches(typed, list(known))

    def format_message(self) -> str:
        """`No such option '--x'.` and the closest names, closest first."""
        if not self.closest:
            return self.message
        if len(self.closest) == 1:
            return f"{self.message} Did you mean {self.closest[0]!r}?"
        return f"{self.message} (Did you mean one of: {', '.join(map(repr, self.closest))}?)"


class PrefixParser(_OptionParser):
    """click's option parser, with each long option expanded by `expand_prefix` before it is matched."""

    def _match_long_opt(self, opt: str, explicit_value: str | None, state: Any) -> None:
        super()._match_long_opt(expand_prefix(opt, self._long_opt), explicit_value, state)
