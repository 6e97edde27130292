"""The launcher's own count of physical cores (for OMP_NUM_THREADS) agrees with psutil's."""

from __future__ import annotations

import psutil

from launcher.node.node_env import omp_threads, physical_cores


def test_physical_cores_are_counted_as_psutil_counts_them() -> None:
    assert physical_cores() == psutil.cpu_count(logical=False)


def test_each_rank_gets_its_share_of_the_physical_cores_and_at_least_one() -> None:
    assert omp_threads(8, 2) == 4
    assert omp_threads(2, 8) == 1
    assert omp_threads(None, 4) == 1
