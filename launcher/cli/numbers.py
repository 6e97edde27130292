"""The click types of every number flag. Integers go through the launcher's one whole-number parser
(`launcher.limits`), so that `٣`, `２`, `1_0`, `+1` and ` 1`, which click's `int` takes, are refused in one line
like any other bad value; numbers of seconds are written with ASCII characters only, for the same reason
(Python's `float()` takes `٣` and `1_0` too).
"""

from __future__ import annotations

import click

from launcher.limits import NOT_A_NUMBER, CountError, Limit, integer, whole_number

__all__ = ["Integer", "Seconds"]


class Integer(click.ParamType):
    """ASCII digits with an optional '-', at least `minimum` (when given) and within `limit` (when given)."""

    name = "integer"

    def __init__(self, minimum: int | None = None, limit: Limit | None = None, index: bool = False) -> None:
        self.minimum, self.limit, self.index = minimum, limit, index

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The flag's text as an int; click's one-line usage error otherwise."""
        source = param.opts[0] if param is not None and param.opts else "value"
        try:
            if self.limit is not None:
                return whole_number(str(value), source, self.limit, self.minimum or 0, self.index)
            number = integer(str(value), source)
            if self.minimum is not None and number < self.minimum:
                raise CountError(source, str(value), f"must be at least {self.minimum}")
            return number
        except CountError as exc:
            if exc.expected == NOT_A_NUMBER:  # click's own words, and which digits count
                self.fail(f"{exc.value!r} is not a valid integer (digits 0-9 only).", param, ctx)
            self.fail(f"{exc.value!r}: {exc.expected}", param, ctx)


class Seconds(click.FloatRange):
    """A click FloatRange whose text holds no other script's digits, no '_' and no surrounding spaces."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The flag's text as a float within the range; click's one-line usage error otherwise."""
        if isinstance(value, str) and (not value.isascii() or "_" in value or value != value.strip()):
            self.fail(f"{value!r} is not a valid number (digits 0-9 only).", param, ctx)
        return super().convert(value, param, ctx)

    def _describe_range(self) -> str:
        """The range as --help shows it; nothing for an unbounded one (click would show `x<=None`)."""
        return super()._describe_range() if self.min is not None or self.max is not None else ""
