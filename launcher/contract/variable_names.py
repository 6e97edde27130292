"""The one rule for the names of variables the launcher passes on (the env file's, `--export`'s,
`.accel_env`'s, a node job's): ASCII letters, digits and '_', not starting with a digit, as a POSIX shell takes
them, and none of the launcher's own internal variables (docs/RELIABILITY.md, "Internal variables"), which only
the launcher sets.
"""

from __future__ import annotations

import re

from launcher.contract.names import HEAD_VARS, INTERNAL_VARS

__all__ = ["VARIABLE_NAME", "NAME_RULE", "is_variable_name", "name_problem"]

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_RULE = "not a variable name (letters, digits and '_', not starting with a digit)"


def is_variable_name(name: str) -> bool:
    """Whether `name` can be a variable of every rank and every node."""
    return VARIABLE_NAME.fullmatch(name) is not None


def name_problem(name: str) -> str | None:
    """Why `name` cannot be set for every rank and node (`is not a variable name ...`, `is the launcher's own
    ...`), or None when it can."""
    if not is_variable_name(name):
        return f"is {NAME_RULE}"
    if name in INTERNAL_VARS or name in HEAD_VARS:
        return "is the launcher's own internal variable, which only it sets (leave it out)"
    return None
