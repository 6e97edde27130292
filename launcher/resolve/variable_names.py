"""The one rule for the names of variables the launcher passes on (the env file's, `--export`'s,
`.accel_env`'s): ASCII letters, digits and '_', not starting with a digit, as a POSIX shell takes them.
"""

from __future__ import annotations

import re

__all__ = ["VARIABLE_NAME", "NAME_RULE", "is_variable_name"]

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_RULE = "not a variable name (letters, digits and '_', not starting with a digit)"


def is_variable_name(name: str) -> bool:
    """Whether `name` can be a variable of every rank and every node."""
    return VARIABLE_NAME.fullmatch(name) is not None
