"""DeepSpeed's --save_pid: the pid file is made new, never over a file or through a link, and removed after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launcher.cli import command
from launcher.errors import FlagConflictError


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(command, "PID_FOLDER", tmp_path)
    return tmp_path


def test_the_file_holds_this_process_s_pid_and_is_removed_after(folder: Path) -> None:
    path = command.save_pid()
    assert path == folder / f"{os.getpid()}.deepspeed"
    assert path.read_text() == str(os.getpid())
    command.remove_pid_file(path)
    assert not path.exists()
    command.remove_pid_file(path)  # gone already: nothing to do


@pytest.mark.parametrize("kind", ["file", "link"])
def test_an_existing_file_or_link_is_refused_and_left_alone(folder: Path, kind: str) -> None:
    path = folder / f"{os.getpid()}.deepspeed"
    target = folder / "elsewhere"
    if kind == "file":
        path.write_text("another launch")
    else:
        path.symlink_to(target)
    with pytest.raises(FlagConflictError, match="--save_pid"):
        command.save_pid()
    assert not target.exists()
    assert kind == "link" or path.read_text() == "another launch"
