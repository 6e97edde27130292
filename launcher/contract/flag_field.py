"""An option declared once, on the field it lands in (`flag`): its names (ours, torchrun's and DeepSpeed's
spellings), help, click type and check, beside the field's type and default.

The command line's click option is made from the declaration (launcher.cli.declared_options), the field is
filled from click's value (`from_flags`), and the check runs where the dataclass says (`check_flags`): on the
head, and again on a node that rebuilds the job from JSON. Click-free and torch-free: a leaf.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypeVar

from launcher.limits import Limit

__all__ = ["Number", "FlagSpec", "flag", "flag_fields", "check_flags", "from_flags", "both"]

_Kind = TypeVar("_Kind")
_KEY = "flag"


@dataclass(frozen=True)
class Number:
    """A number flag's click type: whole (at least `minimum`, within `limit`), or seconds (`whole=False`:
    from `minimum`, above it when `min_open`)."""

    whole: bool = True
    minimum: int | None = None
    limit: Limit | None = None
    index: bool = False
    min_open: bool = False


@dataclass(frozen=True)
class FlagSpec:
    """One option as the user types it; `parse` turns click's value into the field's, `check` refuses a
    field value that cannot work (UsageError naming the flag)."""

    names: tuple[str, ...]
    help: str
    metavar: str | None = None
    number: Number | None = None
    choices: tuple[str, ...] = ()
    any_case: bool = False  # a choice in any case (click's case_sensitive=False)
    multiple: bool = False  # repeatable: the field holds a tuple of the values given
    show_default: bool = False
    parse: Callable[[str], Any] | None = None
    check: Callable[[str, Any], None] | None = None

    @property
    def flag(self) -> str:
        """The name errors give: the first long one."""
        return next(name for name in self.names if name.startswith("--"))


def flag(*names: str, help: str, default: Any = MISSING, default_factory: Any = MISSING, metavar: str | None = None,
         number: Number | None = None, choices: tuple[str, ...] = (), any_case: bool = False, multiple: bool = False,
         show_default: bool = False, parse: Callable[[str], Any] | None = None,
         check: Callable[[str, Any], None] | None = None) -> Any:
    """A dataclass field that is also the option `names` (a bool default makes it an on/off flag)."""
    spec = FlagSpec(names, help, metavar, number, choices, any_case, multiple, show_default, parse, check)
    return field(default=default, default_factory=default_factory, metadata={_KEY: spec})


def both(name: str, *extra: str) -> tuple[str, ...]:
    """A flag in both spellings, `--nproc-per-node` and `--nproc_per_node`, plus any extra names."""
    underscored = name.replace("-", "_")
    return (f"--{name}", *((f"--{underscored}",) if underscored != name else ()), *extra)


def flag_fields(kind: type) -> list[tuple[Field[Any], FlagSpec]]:
    """The fields of the dataclass `kind` that are options, in order, with their declarations."""
    return [(item, item.metadata[_KEY]) for item in fields(kind) if _KEY in item.metadata]


def check_flags(value: object) -> None:
    """Run the declared check of every option field of `value` that holds a value (not None)."""
    for item, spec in flag_fields(type(value)):
        held = getattr(value, item.name)
        if spec.check is not None and held is not None:
            spec.check(spec.flag, held)


def from_flags(kind: type[_Kind], values: Mapping[str, Any], **known: Any) -> _Kind:
    """`kind` from `known` and click's values of its option fields (by name; None: the field's default)."""
    given = {item.name: spec.parse(values[item.name]) if spec.parse else values[item.name]
             for item, spec in flag_fields(kind) if values[item.name] is not None}
    return kind(**given, **known)
