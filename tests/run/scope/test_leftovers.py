"""The private folders: a dead owner's is swept, a live owner's or an unmarked one is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from launcher.run.scope.leftovers import PREFIX, sweep_dead_folders


def folder(parent: Path, name: str, owner: str | None) -> Path:
    path = parent / f"{PREFIX}{name}"
    path.mkdir()
    if owner is not None:
        (path / "owner").write_text(owner)
    return path


def test_only_the_folders_of_dead_owners_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    me = psutil.Process()
    swept = folder(tmp_path, "dead", f"{int(dead.stdout)} 1.00")
    reused = folder(tmp_path, "reused", f"{os.getpid()} 1.00")  # our pid, another start time: a reused pid
    alive = folder(tmp_path, "alive", f"{me.pid} {me.create_time():.2f}")
    unmarked = folder(tmp_path, "new", None)
    other = tmp_path / "something-else"
    other.mkdir()

    assert sorted(sweep_dead_folders(tmp_path)) == sorted([swept, reused])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, unmarked.name, other.name])


def test_a_folder_whose_owner_file_is_still_being_written_is_kept(tmp_path: Path) -> None:
    # Node launchers starting side by side on one machine sweep each other's temp dir: an owner file caught
    # empty or half written must never get a live launcher's folder removed (its ranks' logs went with it).
    empty = folder(tmp_path, "empty", "")
    half = folder(tmp_path, "half", " 1733")

    assert sweep_dead_folders(tmp_path) == []
    assert empty.exists() and half.exists()


def test_the_owner_file_is_written_whole(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from launcher.run.scope import leftovers

    monkeypatch.setattr(leftovers.tempfile, "tempdir", str(tmp_path))
    made = leftovers.make_private_folder()
    try:
        me = psutil.Process()
        assert (made / "owner").read_text() == f"{me.pid} {me.create_time():.2f}"
        assert [path.name for path in made.iterdir()] == ["owner"]  # no temporary file left beside it
    finally:
        leftovers.remove_own_folders()
