"""Bad input of issue 37 (classes 7 and 8): one line, exit 2, before anything starts (no banner first), on a real
`python -m launcher`: --log-dir on /proc or /sys, a dangling link or a loop of links; a ds_config with a
100,001-digit integer; `-m` of a missing submodule or of a package without __main__; a --logs-specs
plugin whose import raises; and a newline in a ds_config path escaped in the banner, as --dry-run escapes it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from .jobs import assert_refused, script

OK = script("ok.py")
BANNER = "rank(s)"
FORGED = "d\naccel-launch: error: forged.json"


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    """The launches' TMPDIR, apart from their working directories."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder

# (id, launcher args, files in the working directory, fragments the error line must hold)
CASES = [
    ("log-dir-proc", ["--log-dir", "/proc", OK], {}, ["--log-dir", "cannot be made in /proc"]),
    ("log-dir-sys-kernel", ["--log-dir", "/sys/kernel", OK], {}, ["--log-dir", "cannot be made in /sys/kernel"]),
    ("log-dir-proc-self-fd", ["--log-dir", "/proc/self/fd", OK], {}, ["--log-dir", "cannot be made in /proc/self/fd"]),
    ("ds-config-huge-integer", ["--ds-config", "ds.json", OK], {"ds.json": '{"a": ' + "9" * 100_001 + "}"},
     ["ds_config ds.json", "too long to read", "100001 digits"]),
    ("module-missing-submodule", ["-m", "pkg.nosub"], {"pkg/__init__.py": ""}, ["no module named 'pkg.nosub'"]),
    ("module-package-without-main", ["-m", "pkg"], {"pkg/__init__.py": ""},
     ["no module named 'pkg.__main__'", "is a package and cannot be directly executed"]),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "files", "fragments"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_is_one_line_before_the_banner(start_job, temp, args, files, fragments):
    job = start_job(args, {"TMPDIR": str(temp)}, files)
    finished = job.finish(timeout=50)

    assert_refused(finished, job, temp, fragments)
    assert BANNER not in finished.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_a_log_dir_that_is_a_link_to_nothing_is_one_line(start_job, tmp_path, temp, kind):
    links = tmp_path / "links"
    links.mkdir()
    if kind == "dangling":
        (links / "logs").symlink_to(tmp_path / "nowhere")
    else:
        (links / "logs").symlink_to(links / "other")
        (links / "other").symlink_to(links / "logs")
    job = start_job(["--log-dir", str(links / "logs"), OK], {"TMPDIR": str(temp)})
    finished = job.finish(timeout=50)

    assert_refused(finished, job, temp, ["--log-dir", "symbolic link to nothing, or a loop of links"])
    assert BANNER not in finished.stderr


@pytest.mark.timeout(120)
def test_a_logs_specs_plugin_whose_import_raises_is_the_users_error_before_the_banner(start_job, tmp_path, temp):
    plugins = tmp_path / "plugins"
    info = plugins / "brokenspecs-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenspecs\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[torchrun.logs_specs]\nbroken = brokenspecs_mod:Specs\n", encoding="utf-8")
    (plugins / "brokenspecs_mod.py").write_text("raise RuntimeError('plugin broken on purpose')\n", encoding="utf-8")
    job = start_job(["--logs-specs", "broken", OK], {"TMPDIR": str(temp), "PYTHONPATH": str(plugins)})
    finished = job.finish(timeout=100)

    assert_refused(finished, job, temp, ["--logs-specs 'broken'", "RuntimeError: plugin broken on purpose",
                                             "the plugin's own code"])
    assert "internal error" not in finished.stderr and BANNER not in finished.stderr


@pytest.mark.timeout(120)
def test_a_newline_in_a_ds_config_path_is_escaped_in_the_banner_as_in_the_dry_run(run_job):
    files = {FORGED: '{"compile": {"backend": "eager"}}'}
    finished, _job = run_job(["--ds-config", FORGED, OK], files=files)

    assert finished.returncode == 0, finished.stderr
    banner = [line for line in finished.stderr.splitlines() if BANNER in line]
    assert len(banner) == 1 and "d\\naccel-launch: error: forged.json" in banner[0]
    assert not [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: error:")]


@pytest.mark.timeout(120)
def test_a_script_swapped_for_a_fifo_after_the_check_is_refused_by_the_rank_not_read(start_job, temp):
    job = start_job(["swapped.py"], {"TMPDIR": str(temp)}, {"swapped.py": "print('never')\n"})
    deadline = time.monotonic() + 60
    while BANNER not in job.output()[1]:  # the launcher's check is done once it says what it starts
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.01)
    (job.workdir / "swapped.py").unlink()
    os.mkfifo(job.workdir / "swapped.py")
    finished = job.finish(timeout=60)

    assert finished.returncode == 2, finished.stderr
    assert "refused to start: script" in finished.stderr and "no longer a regular file" in finished.stderr
