"""Checks of the values the user gives that the launcher passes on.

One check for every number of seconds the user gives: finite, in range, before a timer or torch sees it.

A NaN passes every comparison and an infinity or 1e300 overflows a timer, so each is refused here, for the
launcher's own flags and for the values it passes to torch elastic alike.

The free text: host names, and names that become
variables of every rank (`--role` is ROLE_NAME), which must hold no control character.
"""

from __future__ import annotations

import math
import re

from launcher.errors import UsageError

__all__ = ["MAX_SECONDS", "check_seconds", "whole_seconds", "check_host", "check_printable", "check_given", "HOST"]

MAX_SECONDS = 366 * 24 * 3600  # a year: beyond it a timer is a mistake (and may overflow)
_WHOLE = re.compile(r"[0-9]{1,12}")


def check_seconds(option: str, value: float, limit: float = MAX_SECONDS, above_zero: bool = False) -> None:
    """Raise UsageError unless `value` is a finite number of seconds from 0 (above it: `above_zero`) to `limit`."""
    # An int is compared as it is: math.isfinite would turn a huge one into a float, and raise OverflowError.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float)
                                                                          and not math.isfinite(value)):
        raise UsageError(option, str(value), "expected a finite number of seconds")
    if value < 0 or (above_zero and value == 0):
        raise UsageError(option, value, "must be more than 0 seconds" if above_zero else "must be 0 or more seconds")
    if value > limit:
        raise UsageError(option, value, f"at most {limit} seconds")


def whole_seconds(option: str, text: str, limit: int = MAX_SECONDS) -> int:
    """`text` as a whole number of seconds from 1 to `limit` (ASCII digits only, as torch's int() needs)."""
    if not _WHOLE.fullmatch(text) or not 1 <= int(text) <= limit:
        raise UsageError(option, text, f"expected a whole number of seconds from 1 to {limit}")
    return int(text)


HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}|\[[0-9A-Fa-f:.%A-Za-z]{2,64}\]|[0-9A-Fa-f:]{2,39}")


def check_host(option: str, value: str) -> None:
    """Raise UsageError unless `value` is a host name or an IP address."""
    if not HOST.fullmatch(value):
        raise UsageError(option, value, "expected a host name or an IP address")


def check_printable(option: str, value: str) -> None:
    """Raise UsageError when `value` holds a control character (a newline, a tab, an escape)."""
    bad = next((char for char in value if not char.isprintable()), None)
    if bad is not None:
        raise UsageError(option, value, f"holds the control character U+{ord(bad):04X}; give printable text")


def check_given(option: str, value: str) -> None:
    """Raise UsageError when `value` is empty or blank: a flag given without its value."""
    if not value.strip():
        raise UsageError(option, value, "give a value, or leave the flag out")
