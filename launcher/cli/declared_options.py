"""The click options made from the options declared on the fields of LaunchOptions, RunSettings and
EngineOptions (launcher.contract.flag_field): names, help, type and default are the declaration's, written
nowhere else.

The click types of every number flag (`Integer`, `Seconds`): integers go through the launcher's one whole-number parser
(`launcher.limits`), so that `٣`, `２`, `1_0`, `+1` and ` 1`, which click's `int` takes, are refused in one line
like any other bad value; numbers of seconds are written with ASCII characters only, for the same reason
(Python's `float()` takes `٣` and `1_0` too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Any

import click

from launcher.contract.engine_options import EngineOptions
from launcher.contract.flag_field import FlagSpec, flag_fields
from launcher.contract.run_settings import RunSettings
from launcher.limits import NOT_A_NUMBER, CountError, Limit, integer, whole_number
from launcher.job.options import LaunchOptions

__all__ = ["DECLARED", "with_options", "declared_names", "options_of", "Integer", "Seconds"]

# The dataclasses whose fields declare options, in the order their options are listed in the help.
DECLARED: tuple[type, ...] = (LaunchOptions, RunSettings, EngineOptions)


def declared_names() -> tuple[str, ...]:
    """The parameter names of every declared option (each its field's name)."""
    return tuple(item.name for kind in DECLARED for item, _ in flag_fields(kind))


def with_options(*kinds: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator that gives a click command the options declared on the fields of `kinds`, in order."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed([option for kind in kinds for option in options_of(kind)]):
            command = option(command)
        return command

    return decorate


def options_of(kind: type) -> list[Callable[..., Any]]:
    """The click option decorators of the dataclass `kind`'s option fields, in field order."""
    return [_option(item, spec) for item, spec in flag_fields(kind)]


def _option(item: Field[Any], spec: FlagSpec) -> Callable[..., Any]:
    """The click option of one field: its default is the field's, unless click's value is parsed into it."""
    default = None if item.default is MISSING or spec.parse is not None else item.default
    if isinstance(default, bool):
        return click.option(*spec.names, item.name, is_flag=True, default=default, help=spec.help)
    return click.option(*spec.names, item.name, type=_click_type(spec), default=default, metavar=spec.metavar,
                        multiple=spec.multiple, show_default=spec.show_default, help=spec.help)


def _click_type(spec: FlagSpec) -> click.ParamType | None:
    """Integer or Seconds for a number, with its bounds; a Choice of the declared choices; None (click's text)
    otherwise."""
    if spec.choices:
        return click.Choice(spec.choices, case_sensitive=not spec.any_case)
    number = spec.number
    if number is None:
        return None
    if number.whole:
        return Integer(number.minimum, number.limit, index=number.index)
    return Seconds(min=number.minimum, min_open=number.min_open)


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
