"""Every wait is bounded by the flag that names it (issue 37): in torchrun's static form a node whose node 0 never
comes, a rank that never reaches the agreement, and nodes of different job sizes each end within --rdzv-timeout
with one line, as a rendezvous failure (exit 1) or naming the sizes (exit 2); a program's own store (`store=`)
meets the agreement as env:// does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .jobs import error_lines, script
from .test_several_nodes import free_port, static_form, two_nodes

MEET = script("meet.py")
TIMEOUT = 8
SLACK = 15  # the ranks importing torch on a loaded 2-core machine


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("launch_path")
def test_a_node_whose_node_0_never_comes_ends_after_rdzv_timeout_with_one_line_naming_it(start_job, figures):
    job = start_job([*static_form(1, free_port(), "--rdzv-timeout", str(TIMEOUT)), MEET, "env"])
    finished = job.finish(timeout=TIMEOUT + SLACK + 60)

    assert finished.returncode == 1, finished.stderr
    lines = [line for line in finished.stderr.splitlines() if "rendezvous" in line]
    assert len(lines) == 1 and "--rdzv-timeout 8" in lines[0], finished.stderr
    assert "Traceback" not in finished.stderr and "internal error" not in finished.stderr
    # torch's own connect (the engine's store) tries twice: up to twice the timeout, as torchrun's
    assert finished.seconds < 2 * TIMEOUT + SLACK + 10
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torchrun_ends_a_node_whose_node_0_never_comes_with_exit_1(start_job, figures):
    # torchrun beside ours: its static rendezvous ends after its timeout (rdzv-conf timeout, plus its own wait).
    torchrun = (sys.executable, "-m", "torch.distributed.run")
    job = start_job([*static_form(1, free_port(), "--rdzv-conf", f"timeout={TIMEOUT}"), MEET, "env"],
                    command=torchrun)
    finished = job.finish(timeout=150)

    assert finished.returncode == 1
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(180)
def test_a_rank_that_never_reaches_the_agreement_ends_node_0_as_a_rendezvous_failure(start_job, figures):
    first, second = two_nodes(start_job, ["--rdzv-timeout", str(TIMEOUT), MEET, "absent-node-1"],
                              ["--rdzv-timeout", str(TIMEOUT), MEET, "absent-node-1"])
    finished = first.finish(timeout=TIMEOUT + SLACK + 60)

    assert finished.returncode == 1, finished.stderr
    lines = error_lines(finished.stderr) + [line for line in finished.stderr.splitlines() if "rendezvous" in line]
    assert any("failed at the rendezvous" in line and "--rdzv-timeout" in line for line in lines), finished.stderr
    assert "refused to start" not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("sizes", [("2", "1"), ("1", "2")], ids=["node-0-larger", "node-1-larger"])
def test_nodes_of_different_job_sizes_both_end_naming_the_sizes(start_job, figures, sizes):
    port = free_port()
    jobs = [start_job([*[count if arg == "2" and flag == "--nproc-per-node" else arg
                         for flag, arg in zip(["", *static_form(rank, port)], static_form(rank, port))],
                       "--rdzv-timeout", "60", MEET, "env"], {"ACCEL_LAUNCH_PATH": "auto"})
            for rank, count in enumerate(sizes)]
    done = [job.finish(timeout=120) for job in jobs]

    for finished in done:
        assert finished.returncode == 2, finished.stderr
        assert "job sizes" in finished.stderr and "not what accel-launch writes" not in finished.stderr
        assert finished.seconds < 60  # named at once, not after the agreement's timeout
    figures(seconds=max(finished.seconds for finished in done))


@pytest.mark.timeout(240)
def test_a_programs_own_store_meets_the_backend_agreement(start_job, figures):
    port, env = free_port(), {"ACCEL_LAUNCH_PATH": "auto", "OWN_STORE_PORT": str(free_port())}
    first, second = (start_job([*static_form(rank, port), "--compile-backend", backend, MEET, "own-store"], env)
                     for rank, backend in enumerate(("eager", "aot_eager")))
    done = [first.finish(), second.finish()]

    for finished, job in zip(done, (first, second)):
        assert finished.returncode == 2, finished.stderr
        assert "'eager' (from --compile-backend)" in finished.stderr
        assert not list(Path(job.record_dir).glob("met-*"))  # stopped before init_process_group returned
    figures(seconds=max(finished.seconds for finished in done))
