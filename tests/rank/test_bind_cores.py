"""A rank's side of the CPU binding: pinning itself to its share, or one line saying why it cannot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.contract.names import CPU_BINDING_VAR
from launcher.rank.bind_cores import apply_cpu_binding

REPO = Path(__file__).resolve().parents[2]


def test_apply_cpu_binding_pins_the_process_to_its_local_ranks_share() -> None:
    core = sorted(os.sched_getaffinity(0))[-1]
    code = ("import os; from launcher.rank.bind_cores import apply_cpu_binding; "
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


@pytest.mark.parametrize(("value", "why"), [
    ("x", "digits 0-9"), ("0;", "digits 0-9"), ("0,-1", "must be at least 0"), ("\u0661", "digits 0-9"),
    ("0;99999", "must be below 65536"), ("65535;0", "cannot pin this rank to cores 65535"),
])
def test_a_binding_the_rank_cannot_apply_is_a_value_error_saying_why_and_pins_nothing(value: str, why: str) -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(ValueError, match=re.escape(why)):
        apply_cpu_binding({CPU_BINDING_VAR: value, "LOCAL_RANK": "0"})
    assert os.sched_getaffinity(0) == before
