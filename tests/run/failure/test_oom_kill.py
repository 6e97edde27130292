"""The OOM killer's count and the memory limit, read from a cgroup's files as v1 and v2 write them."""

from __future__ import annotations

import pytest

from launcher.run.failure.oom_kill import MemoryCgroup, memory_cgroup

V1 = ("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill {kills}\n", "memory.limit_in_bytes")
V2 = ("memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill {kills}\noom_group_kill 0\n", "memory.max")


@pytest.mark.parametrize(("version", "files"), [(1, V1), (2, V2)], ids=["v1", "v2"])
def test_the_count_and_the_smallest_limit_up_to_the_root_are_read(tmp_path, version, files):
    counter, text, limit = files
    job = tmp_path / "job" / "ranks"
    job.mkdir(parents=True)
    (job / counter).write_text(text.format(kills=3))
    (job / limit).write_text("9223372036854771712\n" if version == 1 else "max\n")
    (tmp_path / "job" / limit).write_text(str(600 << 20))
    cgroup = MemoryCgroup(job, tmp_path, version)

    assert cgroup.oom_kills() == 3
    assert cgroup.limit() == 600 << 20
    assert cgroup.describe() == "memory cgroup /job/ranks, limit 600 MiB"


def test_a_cgroup_without_a_limit_says_none_and_an_unreadable_count_is_none(tmp_path):
    cgroup = MemoryCgroup(tmp_path / "gone", tmp_path, 2)

    assert cgroup.oom_kills() is None and cgroup.limit() is None
    assert cgroup.describe() == "memory cgroup /gone"


def test_this_process_memory_cgroup_is_found_where_the_machine_has_one():
    cgroup = memory_cgroup()
    if cgroup is None:
        pytest.skip("no memory cgroup on this machine")
    assert cgroup.folder.is_dir() and cgroup.oom_kills() is not None
