"""--bind_cores_to_rank / --bind_core_list: the split of the cores, and each rank running pinned to its share
(the rank's own pinning: tests/rank/test_bind_cores.py)."""

from __future__ import annotations

import json
import os

import pytest

from launcher.contract.names import CPU_BINDING_VAR
from launcher.errors import UsageError
from launcher.node.node_env import binding_env, parse_core_list, split_cores
from tests.launches import SCRIPTS, Launcher


@pytest.mark.parametrize(("text", "cores"), [("1,3-5,7", (1, 3, 4, 5, 7)), ("0", (0,)), ("2-3,2", (2, 3))])
def test_a_core_list_is_read_as_deepspeed_reads_it(text: str, cores: tuple[int, ...]) -> None:
    assert parse_core_list(text) == cores


@pytest.mark.timeout(10)
@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "1-", "0-99999999999", "65536", "\u0660-\u0663", "1_0",
                                  ",".join(["0-65535"] * 2), "0-" + "9" * 5000])
def test_a_malformed_or_unbounded_core_list_is_a_usage_error_before_any_range_is_expanded(text: str) -> None:
    with pytest.raises(UsageError, match="--bind_core_list"):
        parse_core_list(text)


def test_cores_are_split_evenly_and_the_rest_stay_unused() -> None:
    assert split_cores((0, 1, 2, 3, 4), 2, set(range(8))) == ((0, 1), (2, 3))


def test_fewer_cores_than_ranks_is_refused() -> None:
    with pytest.raises(UsageError, match="cannot give each of 3 ranks a core"):
        split_cores((0, 1), 3, {0, 1})


def test_the_ranks_get_their_shares_and_omp_threads_unless_set() -> None:
    assert binding_env(((0, 1), (2, 3)), {}) == {CPU_BINDING_VAR: "0,1;2,3", "OMP_NUM_THREADS": "2"}
    assert binding_env(((0,), (1,)), {"OMP_NUM_THREADS": "4"}) == {CPU_BINDING_VAR: "0;1"}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_each_rank_runs_pinned_to_its_own_cores(launch: Launcher) -> None:
    cores = sorted(os.sched_getaffinity(0))
    result = launch(["--bind_cores_to_rank", "--nproc-per-node", "2", str(SCRIPTS / "dump_env.py")])
    assert result.returncode == 0, result.stderr
    per_rank = len(cores) // 2
    for rank in (0, 1):
        record = json.loads((result.record_dir / f"rank-{rank}.json").read_text())
        assert record["affinity"] == cores[rank * per_rank:(rank + 1) * per_rank]
        assert record["env"]["OMP_NUM_THREADS"] == str(per_rank)
