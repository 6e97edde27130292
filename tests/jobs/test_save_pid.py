"""--save_pid in a real launch: the ranks' parent (the launcher) is named in /tmp/<pid>.deepspeed while the job runs,
and the file is gone after it. The command writes and removes it around either path: one path is enough."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.launches import Launcher

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SCRIPT = """\
import json, os, sys
path = f"/tmp/{os.getppid()}.deepspeed"
with open(sys.argv[1], "w") as out:
    json.dump({"launcher": os.getppid(), "saved": open(path).read() if os.path.exists(path) else None}, out)
"""


@pytest.mark.parametrize("failing", [False, True])
def test_the_launcher_s_pid_is_saved_while_the_job_runs_and_removed_after(
    launch: Launcher, tmp_path: Path, failing: bool
) -> None:
    script = tmp_path / "show.py"
    script.write_text(SCRIPT + ("sys.exit(3)\n" if failing else ""))
    seen = tmp_path / "seen.json"
    result = launch(["--save_pid", str(script), str(seen)])
    assert result.returncode == (3 if failing else 0), result.stderr
    recorded = json.loads(seen.read_text())
    assert recorded["saved"] == str(recorded["launcher"])
    assert not Path(f"/tmp/{recorded['launcher']}.deepspeed").exists()
