"""Long options by unambiguous prefix, as argparse takes them (torchrun's and DeepSpeed's parsers do):
`--redirect 3` is `--redirects 3`, `--nproc_per 2` is `--nproc_per_node 2`.

Only the command's own options are expanded: click stops reading options at the script's name, so nothing
after it is ever looked at here. A prefix of several options is one usage error listing them, and an
unknown option's did-you-mean lists the closest names first (docs/FLAGS.md).
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import click

try:  # click 8.2 and later
    from click.parser import _OptionParser
except ImportError:  # click 8.1, which setup.py allows
    from click.parser import OptionParser as _OptionParser

__all__ = ["PrefixParser", "expand_prefix"]


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
