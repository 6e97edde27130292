"""An option declared once, on its field (launcher.contract.flag_field): the click option, the default, the
value that lands in the field and the check all come from that one declaration."""

from __future__ import annotations

from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from launcher.cli.command import accel_launch
from launcher.cli.declared_options import DECLARED, declared_names, options_of
from launcher.contract.engine_options import EngineOptions
from launcher.contract.flag_field import Number, both, check_flags, flag, from_flags
from launcher.contract.program import Program
from launcher.contract.run_settings import RunSettings
from launcher.contract.user_values import check_given
from launcher.errors import UsageError
from launcher.job.options import LaunchOptions


def _at_most_ten(option: str, depth: int) -> None:
    if depth > 10:
        raise UsageError(option, depth, "at most 10")


@dataclass(frozen=True)
class Tree:
    """A dataclass that exists only here: one declaration per option, nothing else names them."""

    depth: int = flag(*both("tree-depth"), default=3, number=Number(minimum=1), show_default=True,
                      help="How deep the tree grows.", check=_at_most_ten)
    label: str | None = flag("--label", default=None, metavar="TEXT", help="The tree's label.", check=check_given)
    leaves: tuple[str, ...] = flag("--leaves", default=(), metavar="A,B", help="Leaf names.",
                                   parse=lambda text: tuple(text.split(",")))

    def __post_init__(self) -> None:
        check_flags(self)


def _tree_command() -> click.Command:
    def grow(**values: object) -> None:
        click.echo(repr(from_flags(Tree, values)))

    for option in reversed(options_of(Tree)):
        grow = option(grow)
    return click.command()(grow)


def test_a_new_option_is_one_declaration_its_click_option_its_value_and_its_default() -> None:
    command = _tree_command()
    given = CliRunner().invoke(command, ["--tree_depth", "5", "--label", "oak", "--leaves", "a,b"])
    assert given.exit_code == 0, given.output
    assert given.output.strip() == repr(Tree(depth=5, label="oak", leaves=("a", "b")))
    defaulted = CliRunner().invoke(command, [])
    assert defaulted.output.strip() == repr(Tree())
    helped = CliRunner().invoke(command, ["--help"]).output
    assert "--tree-depth, --tree_depth INTEGER" in helped and "[default: 3]" in helped and "--label TEXT" in helped


@pytest.mark.parametrize(("args", "fragment"), [
    (["--tree-depth", "0"], "must be at least 1"),  # the click type, from the declared Number
    (["--tree-depth", "٣"], "digits 0-9 only"),
])
def test_the_declared_click_type_refuses_a_bad_number_in_clicks_one_line(args: list[str], fragment: str) -> None:
    refused = CliRunner().invoke(_tree_command(), args)
    assert refused.exit_code == 2 and fragment in refused.output


@pytest.mark.parametrize(("values", "expected"), [
    ({"depth": 11}, "--tree-depth: 11 (at most 10)"),
    ({"label": " "}, "--label: ' ' (give a value, or leave the flag out)"),
])
def test_the_declared_check_runs_whenever_the_dataclass_is_made_naming_the_long_flag(values: dict[str, object],
                                                                                      expected: str) -> None:
    with pytest.raises(UsageError) as refused:
        Tree(**values)
    assert expected in str(refused.value)


def test_a_launch_with_no_option_given_gets_exactly_the_fields_defaults() -> None:
    context = accel_launch.make_context("accel-launch", ["train.py"])
    engine = from_flags(EngineOptions, context.params)
    settings = from_flags(RunSettings, context.params, engine=engine)
    options = from_flags(LaunchOptions, context.params, program=Program("script", "train.py"), settings=settings)
    assert (engine, settings) == (EngineOptions(), RunSettings())
    assert options == LaunchOptions(Program("script", "train.py"))


def test_every_declared_option_is_on_the_command_once() -> None:
    names = declared_names()
    params = [param.name for param in accel_launch.params]
    assert len(names) == len(set(names)) and all(params.count(name) == 1 for name in names)
    assert {kind.__name__ for kind in DECLARED} == {"LaunchOptions", "RunSettings", "EngineOptions"}
