"""The click options made from the options declared on the fields of LaunchOptions, RunSettings and
EngineOptions (launcher.contract.flag_field): names, help, type and default are the declaration's, written
nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Any

import click

from launcher.cli.numbers import Integer, Seconds
from launcher.contract.engine_options import EngineOptions
from launcher.contract.flag_field import FlagSpec, flag_fields
from launcher.contract.run_settings import RunSettings
from launcher.prepare.options import LaunchOptions

__all__ = ["DECLARED", "with_options", "declared_names", "options_of"]

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
