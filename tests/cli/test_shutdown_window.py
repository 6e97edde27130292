"""The shutdown window is torchrun's: --grace-period / --shutdown-timeout, else TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else
30 s (torch/distributed/launcher/api.py); a bad value of the variable is one line and exit 2."""

from __future__ import annotations

import pytest

from launcher.cli.flags import shutdown_window
from launcher.errors import UsageError


@pytest.mark.parametrize(("environ", "seconds"), [({}, 30), ({"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "8"}, 8),
                                                   ({"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "0"}, 0)])
def test_without_a_flag_the_window_is_torchruns_variable_or_30_seconds(environ, seconds) -> None:
    assert shutdown_window(environ) == seconds


@pytest.mark.parametrize(("value", "why"), [("2.5", "expected a whole number of seconds"), ("٣", "digits 0-9"),
                                            ("", "expected a whole number"), ("3601", "at most 3600 seconds")])
def test_a_variable_torchrun_would_not_take_is_refused_naming_it(value, why) -> None:
    with pytest.raises(UsageError, match="TORCH_ELASTIC_SHUTDOWN_TIMEOUT") as raised:
        shutdown_window({"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": value})
    assert why in str(raised.value)


def test_a_bad_variable_is_one_line_and_exit_2_and_the_flag_wins_over_it(cli, tmp_path) -> None:
    (tmp_path / "ok.py").write_text("")
    refused = cli(["--dry-run", "ok.py"], env={"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "soon"})
    assert refused.status == 2
    assert refused.stderr.splitlines() == [
        "accel-launch: error: invalid value for TORCH_ELASTIC_SHUTDOWN_TIMEOUT: 'soon' "
        "(expected a whole number of seconds (digits 0-9), as torchrun reads it)"]
    given = cli(["--dry-run", "--grace-period", "3", "ok.py"], env={"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "soon"})
    assert given.status == 0, given.stderr
