"""Hostile and mistaken input: exit status 2, one line saying what was wrong and where, no traceback, no rank.

Every case runs in-process through the CLI (tests/cli/test_bad_input.py): its one line and exit status. The
cases of REAL also run as a real `python -m launcher` whose script would record its start (none may), with
TMPDIR watched and the job's processes looked for: one case for each place a refusal is made (click's types,
the option checks, the script, ds_config, .env, the accelerator, the backend check), and the case whose fake
devices need a real process.
"""

from __future__ import annotations

import json
import os

import pytest

from .jobs import FAKE_CUDA, SCRIPTS, assert_refused, error_lines, script, wait_gone

OK = script("ok.py")
LONG_NAME = "x" * 10240
# ACCEL_ACCELERATOR=cuda: without an override the launcher rules cuda out from torch's files, not the seam.
FAKE_CUDA_2 = {"PYTHONPATH": str(FAKE_CUDA), "FAULTS_FAKE_CUDA_DEVICES": "2", "ACCEL_ACCELERATOR": "cuda"}
JSON_TYPO = '{\n  "compile": {"backend": "inductor",}\n}\n'

# (id, launcher args, environment, files in the working directory, fragments the error line must hold)
CASES = [
    ("nproc-zero", ["--nproc-per-node", "0", OK], {}, {}, ["--nproc-per-node", "'0'", "at least 1"]),
    ("nproc-negative", ["--nproc-per-node", "-1", OK], {}, {}, ["--nproc-per-node", "'-1'", "at least 1"]),
    ("nproc-not-a-number", ["--nproc_per_node", "x", OK], {}, {}, ["--nproc-per-node", "'x'", "whole number"]),
    ("nproc-over-devices", ["--nproc-per-node", "3", OK], FAKE_CUDA_2, {}, ["--nproc-per-node", "cuda has 2 devices"]),
    ("nnodes-zero", ["--nnodes", "0", OK], {}, {}, ["--nnodes", "'0'"]),
    ("nnodes-not-a-number", ["--nnodes", "x", OK], {}, {}, ["--nnodes", "'x'", "whole numbers"]),
    ("nnodes-min-over-max", ["--nnodes", "2:1", OK], {}, {}, ["--nnodes", "'2:1'", "MIN <= MAX"]),
    ("node-rank-past-nnodes", ["--node-rank", "1", OK], {}, {}, ["--node-rank", "below --nnodes 1"]),
    ("master-port-zero", ["--master-port", "0", OK], {}, {}, ["--master-port", "between 1 and 65535"]),
    ("master-port-too-big", ["--master-port", "70000", OK], {}, {}, ["--master-port", "70000", "between 1 and 65535"]),
    ("master-port-not-a-number", ["--master-port", "x", OK], {}, {}, ["--master-port", "'x' is not a valid integer"]),
    ("grace-period-negative", ["--grace-period", "-1", OK], {}, {}, ["--grace-period", "-1"]),
    ("timeout-zero", ["--timeout", "0", OK], {}, {}, ["--timeout", "0"]),
    ("script-missing", ["missing.py"], {}, {}, ["script 'missing.py'", "no such file"]),
    ("script-is-a-directory", ["somedir"], {}, {"somedir/x.py": ""}, ["script 'somedir'", "is a directory"]),
    ("no-python-program-missing", ["--no-python", "no-such-program-xyz"], {}, {},
     ["'no-such-program-xyz'", "no such program on PATH"]),
    ("ds-config-missing", ["--ds-config", "nope.json", OK], {}, {}, ["ds_config nope.json", "--ds-config", "no such file"]),
    ("ds-config-missing-from-script-arg", [OK, "--deepspeed_config", "nope.json"], {}, {},
     ["ds_config nope.json", "script argument --deepspeed_config", "no such file"]),
    ("ds-config-empty", ["--ds-config", "ds.json", OK], {}, {"ds.json": ""}, ["ds_config ds.json", "is empty"]),
    ("ds-config-not-json", ["--ds-config", "ds.json", OK], {}, {"ds.json": JSON_TYPO},
     ["ds_config ds.json", "not valid JSON", "line 2 column 37"]),
    ("ds-config-not-an-object", ["--ds-config", "ds.json", OK], {}, {"ds.json": '["inductor"]'},
     ["ds_config ds.json", "must be a JSON object, got an array"]),
    ("ds-config-compile-not-an-object", ["--ds-config", "ds.json", OK], {}, {"ds.json": '{"compile": "inductor"}'},
     ["ds_config ds.json", "'compile' must be an object, got a string"]),
    ("ds-config-backend-a-number", ["--ds-config", "ds.json", OK], {}, {"ds.json": '{"compile": {"backend": 3}}'},
     ["ds_config ds.json", "'compile.backend' must be a string, got a number 3"]),
    ("env-file-bad-line", ["--env-file", "job.env", OK], {}, {"job.env": "GOOD=1\nthis is not an assignment\n"},
     ["env file job.env:2", "not a NAME=value line", "'this is not an assignment'"]),
    ("default-env-file-bad-line", [OK], {}, {".env": "A=1\nB=2\n%%% garbage\n"}, ["/.env:3", "'%%% garbage'"]),
    ("env-file-missing", ["--env-file", "none.env", OK], {}, {}, ["env file none.env", "no such file"]),
    ("accelerator-env-unknown", [OK], {"ACCEL_ACCELERATOR": "bogus"}, {},
     ["ACCEL_ACCELERATOR", "unknown accelerator 'bogus'", "known: cpu, cuda"]),
    ("accelerator-env-file-unknown", [OK], {}, {".env": "ACCEL_ACCELERATOR=bogus\n"},
     ["ACCEL_ACCELERATOR in ", "/.env", "unknown accelerator 'bogus'"]),
    ("accelerator-flag-unknown", ["--accelerator", "bogus", OK], {}, {},
     ["--accelerator", "unknown accelerator 'bogus'", "known: cpu, cuda"]),
    ("accelerator-not-available", ["--accelerator", "cuda", OK], {}, {}, ["--accelerator", "'cuda' is not available here"]),
    ("backend-typo", ["--compile-backend", "inductr", OK], {}, {},
     ["'inductr' (from --compile-backend)", "not supported on cpu", "supported: ", "did you mean 'inductor'?"]),
    ("backend-wrong-case", ["--compile-backend", "Inductor", OK], {}, {},
     ["'Inductor' (from --compile-backend)", "did you mean 'inductor'?"]),
    ("backend-leading-space", ["--compile-backend", " inductor", OK], {}, {},
     ["' inductor' (from --compile-backend)", "surrounding whitespace", "did you mean 'inductor'?"]),
    ("backend-trailing-space-from-env", [OK], {"ACCEL_COMPILE_BACKEND": "eager "}, {},
     ["'eager ' (from ACCEL_COMPILE_BACKEND)", "surrounding whitespace", "did you mean 'eager'?"]),
    ("backend-unicode-look-alike", ["--compile-backend", "\u0456nductor", OK], {}, {},
     ["(from --compile-backend)", "U+0456", "did you mean 'inductor'?"]),
    ("backend-10kB-from-ds-config", ["--ds-config", "ds.json", OK], {},
     {"ds.json": json.dumps({"compile": {"backend": LONG_NAME}})}, ["(from ds_config ds.json)", "10240 characters"]),
    ("backend-empty-flag", ["--compile-backend", "", OK], {}, {}, ["--compile-backend", "give a backend name"]),
    ("backend-import-path-missing", ["--compile-backend", "no_such_pkg_xyz.mod:fn", OK], {}, {},
     ["(from --compile-backend)", "no_such_pkg_xyz"]),
]


REAL = {"nproc-zero", "nproc-over-devices", "master-port-not-a-number", "script-missing", "ds-config-not-json",
        "ds-config-missing-from-script-arg", "env-file-bad-line", "accelerator-env-file-unknown",
        "backend-trailing-space-from-env", "backend-10kB-from-ds-config"}
# Cases that only a real process can show (fake devices come from a sitecustomize on PYTHONPATH).
REAL_ONLY = {"nproc-over-devices"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "env", "files", "fragments"), [case[1:] for case in CASES if case[0] in REAL],
                         ids=[c[0] for c in CASES if c[0] in REAL])
def test_bad_input_exits_2_with_one_line_and_starts_no_rank(run_job, figures, tmp_path, args, env, files, fragments):
    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job(args, {**env, "TMPDIR": str(temp)}, files)

    assert_refused(finished, job, temp, fragments)
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(60)
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file anyway, so the script stays readable")
def test_unreadable_script_exits_2_and_says_permission_denied(run_job, tmp_path):
    unreadable = tmp_path / "secret.py"
    unreadable.write_text("open('started', 'w')\n")
    unreadable.chmod(0)

    finished, job = run_job([str(unreadable)])

    assert finished.returncode == 2
    assert error_lines(finished.stderr) == [f"accel-launch: error: script {str(unreadable)!r}: permission denied"]
    assert "Traceback" not in finished.stderr


@pytest.mark.timeout(180)
def test_import_path_backend_that_raises_in_the_ranks_stops_every_rank_with_one_message(run_job):
    env = {"PYTHONPATH": str(SCRIPTS)}
    finished, job = run_job(["--nproc-per-node", "2", "--compile-backend", "faults_broken_backend:backend", OK], env)

    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
    assert len(summary) == 1, finished.stderr
    assert "refused the compile backend" in summary[0]
    assert "faults_broken_backend" in summary[0] and "broken on purpose" in summary[0]
    assert "RuntimeError" in summary[0]
    assert job.started_ranks() == {}
    assert wait_gone(job.marker, timeout=5) == []


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("how", "said"), [("base", "raised Stop on import"),
                                          ("interrupt", "raised KeyboardInterrupt on import"),
                                          ("exit", "called os._exit(0) on import")])
def test_import_path_backend_that_ends_its_import_any_other_way_is_refused_in_one_line(run_job, how, said):
    env = {"PYTHONPATH": str(SCRIPTS), "ENDING_HOW": how}
    finished, job = run_job(["--nproc-per-node", "2", "--compile-backend", "faults_ending_backend:backend", OK], env)

    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
    assert len(summary) == 1, finished.stderr
    assert "refused the compile backend" in summary[0] and said in summary[0], summary[0]
    assert job.started_ranks() == {}
    assert wait_gone(job.marker, timeout=5) == []
