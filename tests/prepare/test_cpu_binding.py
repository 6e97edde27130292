"""--bind_cores_to_rank / --bind_core_list: the split of the cores, and the pinning each rank applies."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.contract.names import CPU_BINDING_VAR
from launcher.errors import UsageError
from launcher.prepare.cpu_binding import binding_env, parse_core_list, split_cores
from launcher.rank.cpu_binding import apply_cpu_binding
from tests.launches import SCRIPTS, Launcher

REPO = Path(__file__).resolve().parents[2]


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


def test_apply_cpu_binding_pins_the_process_to_its_local_ranks_share() -> None:
    core = sorted(os.sched_getaffinity(0))[-1]
    code = ("import os; from launcher.rank.cpu_binding import apply_cpu_binding; "
            "print(sorted(apply_cpu_binding())); print(sorted(os.sched_getaffinity(0)))")
    env = {**os.environ, CPU_BINDING_VAR: f"0;{core}", "LOCAL_RANK": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [f"[{core}]", f"[{core}]"]


@pytest.mark.parametrize("value", ["x", "0;x", "1_0", ";", "99999"])
def test_a_malformed_binding_in_a_rank_is_a_one_line_value_error_naming_the_variable(value: str) -> None:
    with pytest.raises(ValueError, match=CPU_BINDING_VAR) as caught:
        apply_cpu_binding({CPU_BINDING_VAR: value, "LOCAL_RANK": "0"})
    assert "\n" not in str(caught.value)


def test_without_a_binding_nothing_is_pinned() -> None:
    assert apply_cpu_binding({"LOCAL_RANK": "0"}) is None


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


@pytest.mark.parametrize(("value", "why"), [
    ("x", "digits 0-9"), ("0;", "digits 0-9"), ("0,-1", "must be at least 0"), ("\u0661", "digits 0-9"),
    ("0;99999", "must be below 65536"), ("65535;0", "cannot pin this rank to cores 65535"),
])
def test_a_binding_the_rank_cannot_apply_is_a_value_error_saying_why_and_pins_nothing(value: str, why: str) -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(ValueError, match=re.escape(why)):
        apply_cpu_binding({CPU_BINDING_VAR: value, "LOCAL_RANK": "0"})
    assert os.sched_getaffinity(0) == before
