"""Every bad-input case of tests/faults/ (test_bad_input.py, test_bad_input_campaign.py), in-process through the
CLI: exit status 2, one line on stderr (`accel-launch: error: ...`) holding what was wrong and where, nothing on
stdout, and no job run (the `cli` fixture fails a test whose command would start one). The faults tests run one
case of each kind as a real process, where TMPDIR, the job's processes and the ranks' start files are watched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.faults import test_bad_input, test_bad_input_campaign
from tests.faults.jobs import make_file
from tests.launches import CliRunnerFn

CASES = [case for case in test_bad_input.CASES if case[0] not in test_bad_input.REAL_ONLY] + \
    test_bad_input_campaign.CASES


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "env", "files", "fragments"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2_before_anything_starts(
    cli: CliRunnerFn, tmp_path: Path, args: Sequence[str], env: Mapping[str, str], files: Mapping[str, str],
    fragments: Sequence[str]
) -> None:
    for name, content in files.items():
        make_file(tmp_path / name, content)
    result = cli(list(args), env=dict(env))
    assert result.status == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel-launch: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert len(lines[0]) < 1200


def test_a_removed_working_directory_is_one_line_and_exit_2(cli: CliRunnerFn, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    result = cli(["--dry-run", "ok.py"])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == ("accel-launch: error: the working directory cannot be used (no such file or directory: "
                             "was it removed?); cd to an existing folder and try again\n")


def test_every_case_id_is_unique_so_the_real_subsets_name_existing_cases() -> None:
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids))
    assert test_bad_input.REAL <= {case[0] for case in test_bad_input.CASES}
    assert test_bad_input_campaign.REAL <= {case[0] for case in test_bad_input_campaign.CASES}
