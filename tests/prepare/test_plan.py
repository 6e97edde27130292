"""`--dry-run` prints the resolved plan and starts nothing; the report says what a launch would use."""

from __future__ import annotations

import pytest

from tests.launches import RECORD_RANK, Launcher


@pytest.mark.timeout(90)
def test_dry_run_prints_backend_source_layout_env_and_command_and_starts_nothing(launch: Launcher) -> None:
    result = launch(["--dry_run", "--nproc_per_node", "3", "--compile_backend", "eager", str(RECORD_RANK), "x"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "compile backend : eager (from --compile-backend)" in out
    assert "accelerator     : cpu" in out
    assert "world size      : 3" in out
    for rank in range(3):
        assert f"RANK={rank} LOCAL_RANK={rank} WORLD_SIZE=3" in out
    assert "ACCEL_COMPILE_BACKEND_SOURCE=--compile-backend" in out
    assert f"-m launcher.rank.bootstrap script {RECORD_RANK} x" in out
    assert result.records() == {}


@pytest.mark.timeout(90)
def test_the_report_names_accelerator_backends_and_what_a_launch_would_resolve(launch: Launcher) -> None:
    result = launch(["report"], env={"ACCEL_COMPILE_BACKEND": "eager"})
    assert result.returncode == 0, result.stderr
    rows = dict(line.strip().split(" : ", 1) for line in result.stdout.splitlines()[1:])
    rows = {key.strip(): value for key, value in rows.items()}
    assert rows["accelerator"] == "cpu"
    assert rows["communication backend"] == "gloo"
    assert rows["default compile backend"] == "inductor"
    assert "inductor" in rows["supported compile backends"].split(", ")
    assert "cudagraphs" not in rows["supported compile backends"].split(", ")
    assert rows["a launch here would use"] == "eager (from ACCEL_COMPILE_BACKEND)"
    assert int(rows["device count"]) >= 1


@pytest.mark.timeout(90)
def test_nproc_per_node_auto_means_the_logical_cpus_on_cpu(launch: Launcher) -> None:
    import os

    result = launch(["--dry-run", "--nproc-per-node", "auto", str(RECORD_RANK)])
    assert result.returncode == 0, result.stderr
    assert f"ranks per node  : {os.cpu_count()}" in result.stdout
    assert f"rank env {os.cpu_count() - 1} " in result.stdout
    assert result.records() == {}
