"""Bad input a hostile user tries: each refused before any rank starts.

Exit status 2, one line, no traceback, no rank started, nothing left in TMPDIR, no read that blocks:
a FIFO, a device or a folder where a file is expected is refused without reading it, and sizes and
nesting are bounded. Every case runs in-process through the CLI (tests/cli/test_bad_input.py); the cases of
REAL also run as a real `python -m launcher`: one for each kind of check, and every kind of hostile file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import pytest

from accelerators.torch_build import torch_build
from launcher.rank import node_facts_cache as facts_cache

from .jobs import FIFO, Executable, assert_refused, launcher_leftovers, script

OK = script("ok.py")
DEEP = "[" * 100_000 + "]" * 100_000
TOO_BIG = " " * (1 << 20) + "{}"
STATIC = ["--rdzv-backend", "static", "--master-port", "29999"]
SLURM_ONE = {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NNODES": "1"}
MANY_HOSTS = "".join(f"h{index} slots=1\n" for index in range(65537))
BIG_NODES = "".join(f"h{index} slots=4096\n" for index in range(257))
with open(sys.executable, "rb") as _binary:
    TRUNCATED_ELF = Executable(_binary.read(100))  # the ELF header whole, its program headers cut off
HOSTFILE = {"hf": "localhost slots=1\n"}

# (id, launcher args, environment, files in the working directory, fragments the error line must hold)
CASES = [
    ("grace-period-nan", ["--grace-period", "nan", OK], {}, {}, ["--grace-period", "'nan'", "finite"]),
    ("grace-period-inf", ["--grace-period", "inf", OK], {}, {}, ["--grace-period", "'inf'", "finite"]),
    ("grace-period-huge", ["--grace-period", "1e9", OK], {}, {}, ["--grace-period", "at most 3600 seconds"]),
    ("timeout-inf", ["--timeout", "inf", OK], {}, {}, ["--timeout", "'inf'", "finite"]),
    ("timeout-nan", ["--timeout", "nan", OK], {}, {}, ["--timeout", "'nan'", "finite"]),
    ("timeout-huge", ["--timeout", "1e300", OK], {}, {}, ["--timeout", "at most 31622400 seconds"]),
    ("rdzv-timeout-huge", ["--rdzv-timeout", str(10**12), OK], {}, {}, ["--rdzv-timeout", "at most"]),
    ("rdzv-timeout-zero", ["--rdzv-timeout", "0", OK], {}, {}, ["--rdzv-timeout", "0"]),
    ("nproc-huge", ["--nproc-per-node", "100000", OK], {}, {}, ["--nproc-per-node", "at most 4096"]),
    ("max-restarts-huge", ["--max-restarts", "100000", OK], {}, {}, ["--max-restarts", "at most 1000"]),
    ("max-restarts-negative", ["--max-restarts", "-1", OK], {}, {}, ["--max-restarts", "-1"]),
    ("node-rank-negative", ["--node-rank", "-1", OK], {}, {}, ["--node-rank", "-1"]),
    ("nnodes-three-parts", ["--nnodes", "1:2:3", OK], {}, {}, ["--nnodes", "'1:2:3'"]),
    ("nnodes-two-without-endpoint", ["--nnodes", "2", OK], {}, {}, ["--nnodes", "needs --rdzv-endpoint"]),
    ("master-port-negative", ["--master-port", "-1", OK], {}, {}, ["--master-port", "between 1 and 65535"]),
    ("master-addr-empty", ["--master-addr", "", OK], {}, {}, ["--master-addr", "host name or an IP"]),
    ("master-addr-with-space", ["--master-addr", "a b", OK], {}, {}, ["--master-addr", "'a b'"]),
    ("rdzv-backend-unknown", ["--rdzv-backend", "etcd-v9", OK], {}, {}, ["--rdzv-backend", "'etcd-v9'"]),
    ("rdzv-endpoint-port-too-big", ["--rdzv-endpoint", "h:99999", OK], {}, {}, ["--rdzv-endpoint", "'h:99999'"]),
    ("rdzv-endpoint-port-not-a-number", ["--rdzv-endpoint", "h:x", OK], {}, {}, ["--rdzv-endpoint", "'h:x'"]),
    ("rdzv-endpoint-empty-host", ["--rdzv-endpoint", ":29500", OK], {}, {}, ["--rdzv-endpoint", "':29500'"]),
    ("rdzv-id-with-slash", ["--rdzv-id", "a/b", OK], {}, {}, ["--rdzv-id", "'a/b'"]),
    ("rdzv-id-too-long", ["--rdzv-id", "x" * 200, OK], {}, {}, ["--rdzv-id", "1 to 128"]),
    ("static-rdzv-with-node-range", [*STATIC, "--nnodes", "1:2", OK], {}, {}, ["--nnodes", "fixed node count"]),
    ("restarts-with-static-rendezvous", ["--master-port", "29999", "--max-restarts", "1", OK], {}, {},
     ["--max-restarts", "restarts need the c10d rendezvous", "--rdzv-endpoint"]),
    ("accelerator-empty", ["--accelerator", "", OK], {}, {}, ["--accelerator", "give a value"]),
    ("accelerator-blank-env", [OK], {"ACCEL_ACCELERATOR": "x y"}, {}, ["ACCEL_ACCELERATOR", "unknown accelerator"]),
    ("module-and-no-python", ["-m", "--no-python", "x"], {}, {}, ["cannot be used together"]),
    ("no-script", [], {}, {}, ["Missing argument 'SCRIPT'"]),
    ("option-typo", ["--nproc-per-nodes", "2", OK], {}, {}, ["No such option '--nproc-per-nodes'", "--nproc-per-node"]),
    ("log-dir-empty", ["--log-dir", "", OK], {}, {}, ["--log-dir", "give a value"]),
    ("log-dir-is-a-file", ["--log-dir", "f.txt", OK], {}, {"f.txt": "x"}, ["--log-dir", "f.txt is not a folder"]),
    ("log-dir-under-a-file", ["--log-dir", "f.txt/logs", OK], {}, {"f.txt": "x"}, ["--log-dir", "is not a folder"]),
    ("script-fifo", ["s.py"], {}, {"s.py": FIFO}, ["script 's.py'", "not a regular file"]),
    ("script-device", ["/dev/zero"], {}, {}, ["script '/dev/zero'", "not a regular file"]),
    ("script-syntax-error", ["s.py"], {}, {"s.py": "x = 1\ndef f(:\n"}, ["script 's.py'", "SyntaxError at line 2"]),
    ("script-null-byte", ["s.py"], {}, {"s.py": b"x = 1\0\n"}, ["script 's.py'", "null"]),
    ("script-bad-encoding", ["s.py"], {}, {"s.py": b"x = '\xff'\n"}, ["script 's.py'", "SyntaxError"]),
    ("module-bad-name", ["-m", "a b"], {}, {}, ["'a b'", "not a module name"]),
    ("module-missing", ["-m", "no_such_module_xyz.sub"], {}, {}, ["no module named 'no_such_module_xyz'"]),
    ("ds-config-empty-flag", ["--ds-config", "", OK], {}, {}, ["--ds-config", "give a value"]),
    ("ds-config-fifo", ["--ds-config", "ds.json", OK], {}, {"ds.json": FIFO}, ["ds_config ds.json", "is a FIFO"]),
    ("ds-config-fifo-from-script-arg", [OK, "--deepspeed_config", "ds.json"], {}, {"ds.json": FIFO},
     ["ds_config ds.json (from script argument --deepspeed_config)", "is a FIFO"]),
    ("ds-config-directory", ["--ds-config", "d", OK], {}, {"d/x": ""}, ["ds_config d", "is a directory"]),
    ("ds-config-device", ["--ds-config", "/dev/zero", OK], {}, {}, ["ds_config /dev/zero", "character device"]),
    ("ds-config-too-big", ["--ds-config", "ds.json", OK], {}, {"ds.json": TOO_BIG},
     ["ds_config ds.json", "larger than"]),
    ("ds-config-deeply-nested", ["--ds-config", "ds.json", OK], {}, {"ds.json": DEEP}, ["nested too deeply"]),
    ("ds-config-not-utf8", ["--ds-config", "ds.json", OK], {}, {"ds.json": b'{"a": "\xff"}'}, ["not UTF-8"]),
    ("ds-config-backend-blank", ["--ds-config", "ds.json", OK], {}, {"ds.json": '{"compile": {"backend": " "}}'},
     ["'compile.backend' is empty"]),
    ("ds-config-backend-a-list", ["--ds-config", "ds.json", OK], {}, {"ds.json": '{"compile": {"backend": []}}'},
     ["'compile.backend' must be a string, got an array"]),
    ("env-file-empty-flag", ["--env-file", "", OK], {}, {}, ["--env-file", "give a value"]),
    ("env-file-fifo", ["--env-file", "job.env", OK], {}, {"job.env": FIFO}, ["env file job.env", "is a FIFO"]),
    ("env-file-directory", ["--env-file", "d", OK], {}, {"d/x": ""}, ["env file d", "is a directory"]),
    ("env-file-device", ["--env-file", "/dev/zero", OK], {}, {}, ["env file /dev/zero", "character device"]),
    ("env-file-nul", ["--env-file", "job.env", OK], {}, {"job.env": "A=1\nB=x\0y\n"}, ["job.env:2", "NUL"]),
    ("env-file-not-utf8", ["--env-file", "job.env", OK], {}, {"job.env": b"A=\xff\n"}, ["job.env", "not UTF-8"]),
    ("env-file-too-big", ["--env-file", "job.env", OK], {}, {"job.env": "A=" + "x" * (1 << 20)}, ["larger than"]),
    ("env-file-backend-typo", ["--env-file", "job.env", OK], {}, {"job.env": "ACCEL_COMPILE_BACKEND=eagr\n"},
     ["'eagr' (from ACCEL_COMPILE_BACKEND in job.env)", "did you mean 'eager'?"]),
    # Every count bounded before it is expanded (launcher/limits.py), from every source; ASCII digits only.
    ("num-gpus-huge", ["--num_gpus", "99999", OK], {}, {}, ["--num_gpus", "at most 4096 ranks per node"]),
    ("nproc-arabic-indic-digit", ["--nproc-per-node", "\u0663", OK], {}, {}, ["--nproc-per-node", "digits 0-9"]),
    ("nproc-fullwidth-digit", ["--nproc-per-node", "\uff12", OK], {}, {}, ["--nproc-per-node", "digits 0-9"]),
    ("grace-period-arabic-indic-digit", ["--grace-period", "\u0663", OK], {}, {}, ["--grace-period", "digits 0-9"]),
    ("timeout-underscore", ["--timeout", "1_0", OK], {}, {}, ["--timeout", "'1_0'", "digits 0-9"]),
    ("monitor-interval-fullwidth-digit", ["--monitor-interval", "\uff11", OK], {}, {},
     ["--monitor-interval", "digits 0-9"]),
    ("nproc-underscore", ["--nproc-per-node", "1_0", OK], {}, {}, ["--nproc-per-node", "'1_0'", "digits 0-9"]),
    ("nnodes-max-huge", ["--nnodes", "1:99999999999999999999", "--rdzv-endpoint", "h:29500", OK], {}, {},
     ["--nnodes", "at most 65536 nodes"]),
    ("nnodes-times-nproc-over-total", ["--nnodes", "300", "--nproc-per-node", "4096", "--rdzv-endpoint", "h:29500",
                                       OK], {}, {}, ["--nnodes", "at most 1048576 ranks in the job"]),
    ("node-rank-huge", ["--node-rank", "99999999999999999999", OK], {}, {}, ["--node-rank", "must be below 65536"]),
    ("node-rank-arabic-indic-digit", ["--node-rank", "\u0661", OK], {}, {}, ["--node-rank", "digits 0-9"]),
    ("num-nodes-huge", ["--num_nodes", "99999999999999999999", OK], {}, {}, ["--num_nodes", "at most 65536 nodes"]),
    ("master-port-fullwidth-digit", ["--master-port", "\uff13", OK], {}, {}, ["--master-port", "digits 0-9"]),
    ("rdzv-endpoint-port-arabic-indic", ["--rdzv-endpoint", "h:\u0663", OK], {}, {}, ["--rdzv-endpoint", "1 to 65535"]),
    ("local-ranks-filter-huge", ["--local-ranks-filter", "99999999999999999999", OK], {}, {},
     ["--local-ranks-filter", "must be below 4096"]),
    ("local-ranks-filter-underscore", ["--local-ranks-filter", "1_0", OK], {}, {}, ["--local-ranks-filter", "0-9"]),
    ("tee-rank-huge", ["--tee", "99999:3", OK], {}, {}, ["--tee", "must be below 4096"]),
    ("bind-core-list-empty", ["--bind_core_list", "", OK], {}, {}, ["--bind_core_list", "give cores like 0-3,8"]),
    ("bind-core-list-huge-range", ["--bind_core_list", "0-99999999999", OK], {}, {},
     ["--bind_core_list", "must be below 65536"]),
    ("bind-core-list-many-repeats", ["--bind_core_list", ",".join(["0-65535"] * 3), OK], {}, {},
     ["--bind_core_list", "more than 65536 cores"]),
    ("cpu-binding-env-not-a-number", [OK], {"ACCEL_CPU_BINDING": "x"}, {}, ["ACCEL_CPU_BINDING", "'x'"]),
    ("cpu-binding-env-file-underscore", [OK], {}, {".env": "ACCEL_CPU_BINDING=1_0\n"}, ["ACCEL_CPU_BINDING", "'1_0'"]),
    ("cpu-binding-env-core-missing", [OK], {"ACCEL_CPU_BINDING": "65535"}, {},
     ["ACCEL_CPU_BINDING", "65535 are not available"]),
    ("include-local-slot-huge", ["--include", "localhost:99999", OK], {}, {}, ["--include", "must be below 4096"]),
    ("include-local-slot-arabic-indic", ["--include", "localhost:\u0661", OK], {}, {}, ["--include", "0-9"]),
    ("hostfile-slots-huge", ["--hostfile", "hosts", OK], {}, {"hosts": "a slots=99999999999999999999\n"},
     ["hostfile hosts:1", "at most 4096 ranks per node"]),
    ("hostfile-fifo", ["--hostfile", "hosts", OK], {}, {"hosts": FIFO}, ["hostfile hosts", "is a FIFO"]),
    ("hostfile-too-many-hosts", ["--hostfile", "hosts", OK], {}, {"hosts": MANY_HOSTS},
     ["hostfile hosts:65537", "more than 65536 hosts"]),
    ("hostfile-selection-over-total", ["--hostfile", "hosts", OK], {}, {"hosts": BIG_NODES},
     ["hostfile's selection", "at most 1048576 ranks in the job"]),
    ("hostfile-pdsh-table-too-long", ["--dry-run", "--launcher", "pdsh", "--hostfile", "hosts", OK], {},
     {"hosts": "".join(f"host{index} slots=8\n" for index in range(10000))}, ["pdsh command", "at most 131072"]),
    ("hostfile-include-slot-arabic-indic", ["--hostfile", "hosts", "--include", "a:\u0661", OK], {},
     {"hosts": "a slots=2\n"}, ["--include", "not a slot number"]),
    ("accel-env-file-not-utf8", ["--dry-run", "--hostfile", "hosts", OK], {},
     {"hosts": "a slots=1\n", ".accel_env": b"A=\xff\n"}, [".accel_env", "is not UTF-8"]),
    ("slurm-nodelist-huge-range", ["--dry-run", OK], {**SLURM_ONE, "SLURM_JOB_NODELIST": "n[0-999999999]"}, {},
     ["SLURM_JOB_NODELIST", "more than 65536 hosts"]),
    ("slurm-ntasks-huge", [OK], {"SLURM_PROCID": "0", "SLURM_NTASKS": "99999999999999999999"}, {},
     ["SLURM_NTASKS", "at most 65536 nodes"]),
    ("slurm-procid-fullwidth-digit", [OK], {**SLURM_ONE, "SLURM_PROCID": "\uff10"}, {}, ["SLURM_PROCID", "0-9"]),
    ("openmpi-size-huge", [OK], {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "70000"}, {},
     ["OMPI_COMM_WORLD_SIZE", "at most 65536 nodes"]),
    ("node-table-device-huge", [OK], {"ACCEL_NODE_RANK": "0", "ACCEL_NODE_HOSTS": "a", "ACCEL_NODE_DEVICES": "99999"},
     {}, ["ACCEL_NODE_DEVICES", "must be below 4096"]),
    # Values that reach torch's engine, the OS or exec: checked first, never an internal error.
    ("monitor-interval-nan", ["--monitor-interval", "nan", OK], {}, {}, ["--monitor-interval", "'nan'", "finite"]),
    ("monitor-interval-huge", ["--monitor-interval", "1e300", OK], {}, {}, ["--monitor-interval", "at most 3600"]),
    ("monitor-interval-zero", ["--monitor-interval", "0", OK], {}, {}, ["--monitor-interval", "more than 0"]),
    ("log-dir-name-too-long", ["--log-dir", "x" * 5000, OK], {}, {}, ["--log-dir", "cannot be made (File name too long)"]),
    ("rdzv-conf-negative-timeout", ["--rdzv-conf", "join_timeout=-5", OK], {}, {},
     ["--rdzv-conf join_timeout", "'-5'", "whole number of seconds from 1"]),
    ("rdzv-conf-timeout-nan", ["--rdzv-conf", "timeout=nan", OK], {}, {}, ["--rdzv-conf timeout", "'nan'"]),
    ("rdzv-conf-timeout-huge", ["--rdzv-conf", "read_timeout=" + "9" * 5000, OK], {}, {},
     ["--rdzv-conf read_timeout", "whole number of seconds"]),
    ("rdzv-conf-non-ascii-digits", ["--rdzv-conf", "close_timeout=\u0663", OK], {}, {}, ["--rdzv-conf close_timeout"]),
    ("rdzv-conf-rank", [*STATIC, "--rdzv-conf", "rank=3", OK], {}, {}, ["'rank=3'", "--node-rank"]),
    ("rdzv-conf-our-own-key", ["--rdzv-conf", "accel_backend=eager", OK], {}, {},
     ["'accel_backend=eager'", "launcher"]),
    ("rdzv-conf-not-a-boolean", ["--rdzv-conf", "is_host=maybe", OK], {}, {}, ["--rdzv-conf is_host", "'maybe'"]),
    ("rdzv-conf-keep-alive-zero", ["--rdzv-conf", "keep_alive_max_attempt=0", OK], {}, {},
     ["--rdzv-conf keep_alive_max_attempt", "from 1 to 1000"]),
    ("rdzv-conf-file-store", ["--rdzv-conf", "store_type=file", OK], {}, {}, ["--rdzv-conf store_type", "tcp"]),
    ("event-log-handler-unknown", ["--event-log-handler", "nosuchhandler", OK], {}, {},
     ["--event-log-handler", "'nosuchhandler'", "null, console, dynamic_rendezvous"]),
    ("local-addr-empty", ["--local-addr", "", OK], {}, {}, ["--local-addr", "''", "host name"]),
    ("local-addr-newline", ["--local-addr", "a\nb", OK], {}, {}, ["--local-addr", "'a\\nb'"]),
    ("role-newline", ["--role", "a\nb", OK], {}, {}, ["--role", "'a\\nb'", "control character U+000A"]),
    ("role-escape", ["--role", "a\x1b[2Jb", OK], {}, {}, ["--role", "U+001B"]),
    ("ds-config-name-newline", ["--ds-config", "a\nb.json", OK], {}, {}, ["ds_config a\\nb.json", "no such file"]),
    ("env-file-name-bidi-override", ["--env-file", "a\u202eb.env", OK], {}, {}, ["env file a\\u202eb.env"]),
    ("env-file-name-starts-with-digit", [OK], {}, {".env": "A=1\n1A=2\n"},
     ["/.env:2", "'1A'", "not a variable name"]),
    ("env-file-name-not-ascii", ["--env-file", "job.env", OK], {}, {"job.env": "\u00c4\u00d6=1\n"},
     ["job.env:1", "'\u00c4\u00d6'", "not a variable name"]),
    ("cpu-binding-env-garbage", [OK], {"ACCEL_CPU_BINDING": "x"}, {},
     ["ACCEL_CPU_BINDING in the environment", "'x'", "--bind_cores_to_rank"]),
    ("cpu-binding-env-file-garbage", [OK], {}, {".env": "ACCEL_CPU_BINDING=0;x\n"},
     ["ACCEL_CPU_BINDING in the env file", "'0;x'"]),
    ("cpu-binding-env-core-huge", [OK], {"ACCEL_CPU_BINDING": "0;99999"}, {},
     ["ACCEL_CPU_BINDING", "must be below 65536"]),
    ("no-python-interpreter-missing", ["--no-python", "./prog"], {}, {"prog": Executable(b"#!/nonexistent/python\n")},
     ["'./prog'", "interpreter '/nonexistent/python'", "no such file"]),
    ("no-python-interpreter-a-folder", ["--no-python", "./prog"], {}, {"prog": Executable(b"#!/ -x\n")},
     ["'./prog'", "interpreter '/'", "not an executable file"]),
    ("no-python-interpreter-windows-line-end", ["--no-python", "./prog"], {}, {"prog": Executable(b"#!/bin/sh\r\n")},
     ["interpreter '/bin/sh\\r'", "no such file"]),
    ("no-python-interpreter-nul", ["--no-python", "./prog"], {}, {"prog": Executable(b"#!/nonexistent\0/bin/sh\n")},
     ["interpreter '/nonexistent'", "no such file"]),
    ("no-python-truncated-binary", ["--no-python", "./prog"], {}, {"prog": TRUNCATED_ELF},
     ["'./prog'", "truncated ELF binary (100 bytes"]),
    ("runner-not-on-path", ["--hostfile", "hf", OK], {"PATH": ""}, HOSTFILE,
     ["--launcher ssh", "'ssh' is not a program on PATH (empty)"]),
]


REAL = {"grace-period-nan", "rdzv-endpoint-port-too-big", "option-typo", "no-script", "module-and-no-python",
        "log-dir-under-a-file", "script-fifo", "script-device", "script-syntax-error", "module-missing",
        "ds-config-fifo-from-script-arg", "ds-config-too-big", "ds-config-deeply-nested", "env-file-fifo",
        "env-file-nul", "env-file-backend-typo", "accelerator-blank-env", "num-gpus-huge", "hostfile-fifo",
        "slurm-nodelist-huge-range", "bind-core-list-huge-range", "hostfile-slots-huge", "monitor-interval-nan",
        "rdzv-conf-negative-timeout", "event-log-handler-unknown", "role-newline", "ds-config-name-newline",
        "env-file-name-starts-with-digit", "cpu-binding-env-file-garbage", "no-python-interpreter-missing",
        "no-python-truncated-binary", "runner-not-on-path"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "env", "files", "fragments"), [case[1:] for case in CASES if case[0] in REAL],
                         ids=[c[0] for c in CASES if c[0] in REAL])
def test_campaign_bad_input_exits_2_with_one_line_and_leaves_nothing(run_job, figures, tmp_path, args, env, files,
                                                                     fragments):
    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job(args, {**env, "TMPDIR": str(temp)}, files, timeout=50)

    assert_refused(finished, job, temp, fragments)
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_a_corrupt_backend_facts_cache_is_rebuilt_and_the_refusal_lists_the_real_backends(run_job, tmp_path):
    # The file the launcher will look up (its key made as the launcher makes it), planted with hostile content;
    # other corrupt shapes (an empty list, another key, bad JSON): tests/rank/test_node_facts_cache.py.
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    build = torch_build()
    key = facts_cache.cache_key("cpu", asdict(build) if build is not None else None)
    path = facts_cache.cache_file(facts_cache.cache_dir(env), key)
    path.parent.mkdir(parents=True)
    path.write_text(f'{{"key": {json.dumps(key)}, "supported_backends": {DEEP}}}')

    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job(["--compile-backend", "inductr", OK], {**env, "TMPDIR": str(temp)})

    assert_refused(finished, job, temp, ["'inductr'", "supported: ", "eager", "did you mean 'inductor'?"])
    assert "supported: none" not in finished.stderr
    assert "inductor" in json.loads(path.read_text())["supported_backends"]


@pytest.mark.timeout(60)
def test_a_removed_working_directory_is_one_line_and_exit_2(start_job, figures, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    in_removed_folder = (sys.executable, "-c", "import os, sys; os.mkdir('gone'); os.chdir('gone'); "
                         "os.rmdir('../gone'); "
                         "os.execv(sys.executable, [sys.executable, '-m', 'launcher', *sys.argv[1:]])")
    job = start_job([OK], {"TMPDIR": str(temp)}, command=in_removed_folder)
    finished = job.finish(timeout=50)

    assert_refused(finished, job, temp, ["the working directory cannot be used", "was it removed?"])
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_a_program_exec_cannot_run_is_each_ranks_one_line_refusal_reported_once(run_job, figures, tmp_path):
    # Neither `#!` nor ELF: the launcher leaves the format to exec (binfmt_misc may know it); exec refuses it.
    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job(["--nproc-per-node", "2", "--no-python", "./prog"], {"TMPDIR": str(temp)},
                            {"prog": Executable(b"echo a shell script without its #! line\n")}, timeout=100)

    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    refusals = [line for line in finished.stderr.splitlines() if "refused to start" in line]
    assert len(refusals) == 1, finished.stderr
    assert "cannot run './prog' (--no-python): Exec format error" in refusals[0]
    assert launcher_leftovers(temp) == []
    figures(status=finished.returncode, seconds=finished.seconds)
