"""Nothing left: a SIGKILLed launcher's private folder is swept by the next launch; a live one's never is."""

from __future__ import annotations

import signal

import pytest

from .jobs import launcher_leftovers, script, wait_gone

@pytest.mark.usefixtures("launch_path")  # each path's launcher leaves only its own folder
@pytest.mark.timeout(240)
def test_the_folder_of_a_sigkilled_launcher_is_swept_by_the_next_launch(start_job, run_job, figures, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = start_job([script("hang.py")], {"TMPDIR": str(temp)})  # one rank: the folder is the launcher's
    killed.wait_started(1)
    killed.send(signal.SIGKILL)
    killed.finish()
    assert wait_gone(killed.marker, timeout=10) == []
    assert [path.name[:13] for path in launcher_leftovers(temp)] == ["accel-launch-"]  # a SIGKILL cannot clean

    finished, job = run_job([script("ok.py")], {"TMPDIR": str(temp)})

    assert finished.returncode == 0, finished.stderr
    assert launcher_leftovers(temp) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
def test_the_folder_of_a_running_launcher_is_kept_by_another_launch(start_job, run_job, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    running = start_job([script("record.py"), "--wait-release"], {"TMPDIR": str(temp)})
    running.wait_started(1)
    folder = launcher_leftovers(temp)

    finished, _ = run_job([script("ok.py")], {"TMPDIR": str(temp)})

    assert finished.returncode == 0, finished.stderr
    assert launcher_leftovers(temp) == folder
    (running.record_dir / "release").touch()
    assert running.finish().returncode == 0
    assert launcher_leftovers(temp) == []
