"""Checks of the free text the user gives that the launcher passes on: host names, and names that become
variables of every rank (`--role` is ROLE_NAME), which must hold no control character.
"""

from __future__ import annotations

import re

from launcher.errors import UsageError

__all__ = ["check_host", "check_printable", "check_given", "HOST"]

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
