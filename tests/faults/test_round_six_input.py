"""Round six (issue 48), the launcher's side of the input: the compile variables are judged before anything starts,
as torch and the ranks read them (class 5), and a second launcher given one node rank is told who holds it (class
12). docs/RELIABILITY.md, "Round six (issue 48)"."""

from __future__ import annotations

import signal
import threading
import time
from datetime import timedelta

import pytest
from torch.distributed import TCPStore

from launcher.agreement import AgreementTimeout, agree
from launcher.contract.resolved_backend import BackendClaim
from launcher.errors import UsageError
from launcher.job.rank_defaults import check_compile_variables

from .jobs import assert_refused, error_lines, script
from .test_several_nodes import free_port

SECRET = "abcdefghijklmnopq"
NOT_UTF8 = SECRET + "\udcff\udcfe"  # os.environ's form of the bytes ff fe: Popen hands them on as they were
A_FILE = "a-file"  # made in the job's folder by the test

# name: (flags, the variables, the fragments of the one line)
BAD_VARIABLES = {
    "secret-not-utf8-cache-off": (["--compile-cache", "off", "--nproc-per-node", "1"],
                                  {"ACCEL_COMPILE_CACHE_SECRET": NOT_UTF8},
                                  ["ACCEL_COMPILE_CACHE_SECRET: '<hidden>' (not UTF-8 text"]),
    "compile-threads-abc": (["--nproc-per-node", "2"], {"TORCHINDUCTOR_COMPILE_THREADS": "abc"},
                            ["TORCHINDUCTOR_COMPILE_THREADS: 'abc' (torch reads it as a whole number"]),
    "cache-dir-a-file": (["--nproc-per-node", "2"], {"TORCHINDUCTOR_CACHE_DIR": A_FILE},
                         ["TORCHINDUCTOR_CACHE_DIR: 'a-file' (", "a-file is not a folder"]),
    "cache-dir-under-a-file": (["--nproc-per-node", "2"], {"TORCHINDUCTOR_CACHE_DIR": f"{A_FILE}/inductor"},
                               ["TORCHINDUCTOR_CACHE_DIR: 'a-file/inductor' (", "a-file is not a folder"]),
}


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", BAD_VARIABLES)
def test_a_bad_compile_variable_on_a_first_launch_is_one_line_before_any_rank(start_job, figures, tmp_path, case):
    # A first launch: fresh HOME, TMPDIR and cache, so the launcher would import torch to list the compile backends
    # (where torch itself raised on these values: the launcher's internal error).
    flags, variables, fragments = BAD_VARIABLES[case]
    fresh = {name: tmp_path / name for name in ("home", "tmp", "cache")}
    for folder in fresh.values():
        folder.mkdir()
    env = {"HOME": str(fresh["home"]), "TMPDIR": str(fresh["tmp"]), "XDG_CACHE_HOME": str(fresh["cache"]), **variables}
    job = start_job([*flags, script("ok.py")], env, files={A_FILE: "not a folder\n"})
    finished = job.finish(timeout=60)

    assert_refused(finished, job, fresh["tmp"], fragments)
    assert "internal error" not in finished.stderr and SECRET not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_bad_compile_variable_in_the_env_file_names_the_file(run_job):
    finished, job = run_job(["--nproc-per-node", "2", script("ok.py")],
                            files={".env": "TORCHINDUCTOR_COMPILE_THREADS=four\n"})

    assert finished.returncode == 2 and job.started_ranks() == {}, finished.stderr
    assert error_lines(finished.stderr) == [f"accel-launch: error: invalid value for TORCHINDUCTOR_COMPILE_THREADS in "
                                            f"{job.workdir / '.env'}: 'four' (torch reads it as a whole number of "
                                            "compile workers (e.g. 4; 1 compiles in the rank itself); set one, or "
                                            "unset it)"]


@pytest.mark.parametrize("threads", ["4", " 3", "+2", "1_0", "0", "-1"])
def test_every_compile_thread_count_torch_reads_is_taken(threads) -> None:
    check_compile_variables({"TORCHINDUCTOR_COMPILE_THREADS": threads})  # torch's int() takes each


@pytest.mark.parametrize("environ", [{"TORCHINDUCTOR_COMPILE_THREADS": value} for value in ("abc", "", "2.5", "4 x")]
                         + [{"ACCEL_COMPILE_CACHE_SECRET": NOT_UTF8}, {"ACCEL_COMPILE_CACHE_SECRET": "\udc80" * 40}])
def test_what_torch_or_the_ranks_cannot_read_is_refused_naming_the_variable(environ) -> None:
    with pytest.raises(UsageError) as caught:
        check_compile_variables(environ)
    assert caught.value.option in environ
    assert SECRET not in str(caught.value) and "\\udc" not in str(caught.value)  # a secret is never shown


def test_a_wait_the_stores_end_cuts_short_says_how_long_it_waited() -> None:
    # Node 0 hosts the store and ends 1 s into node 1's 30 s wait for the others: the line says 1 s, not 30.
    hosting = [TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)]  # its only reference
    client = TCPStore("127.0.0.1", hosting[0].port, is_master=False)
    hosting[0].set("accel/agreement/first", b"0 3 " + BackendClaim("inductor", "--compile-backend", "host0").encode())
    hosting[0].add("accel/agreement/arrivals", 1)
    ending = threading.Timer(1.0, hosting.clear)
    started = time.monotonic()
    ending.start()
    with pytest.raises(AgreementTimeout) as caught:
        agree(client, 1, 3, BackendClaim("inductor", "--compile-backend", "host1"), timedelta(seconds=30))
    ending.join()

    assert time.monotonic() - started < 10
    assert "within 30 s" not in str(caught.value)
    assert "the rendezvous store was gone after 1." in str(caught.value) and "of the 30 s wait" in str(caught.value)


def duplicate_node_form(node_rank: int, port: int) -> list[str]:
    return ["--nnodes", "2", "--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port", str(port),
            "--nproc-per-node", "1", "--rdzv-timeout", "120", script("collective_loop.py")]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("launch_path")
def test_a_second_node_1_is_told_which_host_holds_node_rank_1_and_the_job_runs_on(start_job, figures, launch_path):
    port, env = free_port(), {"LOOP_SECONDS": "150"}
    first, second = (start_job(duplicate_node_form(rank, port), env) for rank in (0, 1))
    for job, rank in ((first, 0), (second, 1)):
        while not (job.record_dir / f"started-{rank}").exists():  # the job formed: both ranks in their loop
            assert first.proc.poll() is None and second.proc.poll() is None, (first.output(), second.output())
            assert time.monotonic() - job.started_at < 120
            time.sleep(0.1)
    duplicate = start_job(duplicate_node_form(1, port), env)
    refused = duplicate.finish(timeout=90)  # before the agreement's wait (--rdzv-timeout) or the job could end it
    running = [first.proc.poll(), second.proc.poll()]
    for job in (first, second):
        job.send(signal.SIGTERM)
    done = [first.finish(timeout=60), second.finish(timeout=60)]

    assert refused.returncode == 1, refused.stderr
    line = next((line for line in refused.stderr.splitlines() if "already held" in line), refused.stderr)
    assert "node rank 1 is already held by " in line and f"(pid {second.pid}): " in line, line
    assert "give each node its own --node-rank" in line and "Traceback" not in refused.stderr
    assert not (duplicate.record_dir / "started-1").exists()
    assert running == [None, None], [finished.stderr for finished in done]  # the job ran on, untouched
    assert [finished.returncode for finished in done] == [128 + signal.SIGTERM] * 2, [f.stderr for f in done]
    figures(status=refused.returncode, seconds=refused.seconds)
