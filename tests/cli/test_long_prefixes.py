"""Long options by unambiguous prefix, as torchrun's and DeepSpeed's argparse parsers take them: each prefix is
parsed by their real parser beside ours (in-process), and an ambiguous one is one line with exit 2."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
import pytest

from launcher.cli.command import accel_launch
from tests.launches import RECORD_RANK, CliRunnerFn


def _ours(args: Sequence[str]) -> dict[str, Any]:
    """The values our click command takes from `args` (parsed only: nothing is checked or started)."""
    return dict(accel_launch.make_context("accel-launch", [*args, "x.py"], resilient_parsing=False).params)


def _torchrun(args: Sequence[str]) -> Any:
    from torch.distributed.run import get_args_parser

    return get_args_parser().parse_args([*args, "x.py"])


def _deepspeed(args: Sequence[str]) -> Any:
    from deepspeed.launcher.runner import parse_args

    return parse_args([*args, "x.py"])


@pytest.mark.parametrize(("prefixed", "full", "peer"), [
    (["--redirect", "3"], ["--redirects", "3"], _torchrun),
    (["--redirect=3"], ["--redirects=3"], _torchrun),
    (["--nproc_per", "2"], ["--nproc_per_node", "2"], _torchrun),
    (["--nproc-per", "2"], ["--nproc-per-node", "2"], _torchrun),
    (["--max-rest", "1"], ["--max-restarts", "1"], _torchrun),
    (["--standalon"], ["--standalone"], _torchrun),
    (["--rdzv-e", "h:1"], ["--rdzv-endpoint", "h:1"], _torchrun),
    (["--num_g", "2"], ["--num_gpus", "2"], _deepspeed),
    (["--num_n", "1"], ["--num_nodes", "1"], _deepspeed),
    (["--bind_cores", "--bind_core_l", "0-1"], ["--bind_cores_to_rank", "--bind_core_list", "0-1"], _deepspeed),
    (["--host", "hf"], ["--hostfile", "hf"], _deepspeed),
])
def test_an_unambiguous_prefix_is_the_option_it_begins_as_in_torchrun_and_deepspeed(
    prefixed: list[str], full: list[str], peer: Any
) -> None:
    assert peer(prefixed) == peer(full)  # their parser takes the prefix
    assert _ours(prefixed) == _ours(full)
    assert _ours(prefixed) != _ours([])  # and the option changed what was parsed


@pytest.mark.parametrize(("prefix", "peer"), [("--rdzv", _torchrun), ("--master", _torchrun), ("--no_ss", _deepspeed),
                                              ("--nn", None), ("--local", _torchrun)])
def test_a_prefix_of_several_options_is_refused_by_them_and_by_us(
    prefix: str, peer: Any, cli: CliRunnerFn, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [prefix, "1"]
    if peer is not None:
        with pytest.raises(SystemExit) as refused:
            peer(args)
        assert refused.value.code == 2
        assert "ambiguous option" in capsys.readouterr().err
    if prefix == "--nn":  # unambiguous: --nnodes alone
        assert _ours(args)["nnodes"] == "1"
        return
    result = cli([*args, str(RECORD_RANK)])
    assert result.status == 2 and result.stdout == ""
    line, = result.stderr.splitlines()
    assert line.startswith(f"accel-launch: error: ambiguous option: {prefix} could match --"), line
    assert line.count(prefix) >= 3  # the typed prefix and at least two candidates


def test_the_scripts_own_arguments_are_never_expanded(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--nproc_per", "2", str(RECORD_RANK), "--redirect", "--nproc"])
    assert result.status == 0, result.stderr
    assert result.row("ranks per node") == "2"
    assert result.row("node 0 command").endswith(f"{RECORD_RANK} --redirect --nproc")


def test_an_unknown_option_suggests_the_closest_names_first(cli: CliRunnerFn) -> None:
    result = cli(["--nproc-per-nodes", "2", str(RECORD_RANK)])
    assert result.status == 2
    assert "Did you mean one of: '--nproc-per-node', '--nproc_per_node', '--grace-period'?" in result.stderr


def test_an_unknown_option_is_still_click_s_no_such_option() -> None:
    with pytest.raises(click.NoSuchOption):
        _ours(["--bogus"])
