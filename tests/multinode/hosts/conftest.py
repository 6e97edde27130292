"""Session fixtures: four real hosts (network + UTS namespaces, an sshd each), removed at the end of the
session, at exit, and swept on the next run if this one is killed; and a Slurm cluster on them."""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator

import pytest

from tests.multinode.hosts.hosts import (
    Cluster,
    make_cluster,
    namespaces_possible,
    programs_missing,
    remove_cluster,
    sweep_stale,
)
from tests.multinode.hosts.slurm_cluster import Slurm, slurm_missing, start_slurm


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """hosta (198.18.7.1) to hostd (198.18.7.4); a skip on a machine that cannot create namespaces."""
    why_not = namespaces_possible()
    if why_not is not None:
        pytest.skip(why_not)
    _require(programs_missing())
    sweep_stale()
    made = make_cluster(tmp_path_factory.mktemp("hosts"))
    atexit.register(remove_cluster, made)
    try:
        yield made
    finally:
        remove_cluster(made)
        atexit.unregister(remove_cluster)


@pytest.fixture(scope="session")
def slurm(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Slurm:
    """A real two-node Slurm cluster (munged, slurmctld, a slurmd on each host) on `cluster`'s hosts; its
    daemons go with the hosts."""
    _require(slurm_missing())
    return start_slurm(cluster, tmp_path_factory.mktemp("slurm"))


def _require(missing: str | None) -> None:
    """Skip when a program is missing; fail instead under .ci/run, which installs them (ACCEL_REQUIRE_HOSTS=1)."""
    if missing is None:
        return
    if os.environ.get("ACCEL_REQUIRE_HOSTS") == "1":
        pytest.fail(f"ACCEL_REQUIRE_HOSTS=1 but the real-hosts tests {missing}")
    pytest.skip(missing)
