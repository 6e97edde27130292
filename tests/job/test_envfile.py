"""The .env reader: values read without running anything, and a malformed line named by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.errors import EnvFileError
from launcher.job.envfile import read_env_file


def test_env_file_values_are_read_without_running_anything(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=1\nexport B='two words'\n# comment\nC=$(touch {})\n".format(tmp_path / "x"))
    assert read_env_file(path) == {"A": "1", "B": "two words", "C": f"$(touch {tmp_path / 'x'})"}
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("line", ["A B=1", "=value", "'unterminated"])
def test_a_malformed_env_line_names_file_and_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / ".env"
    path.write_text(f"GOOD=1\n{line}\n")
    with pytest.raises(EnvFileError, match=rf"{path}:2: not a NAME=value line"):
        read_env_file(path)
