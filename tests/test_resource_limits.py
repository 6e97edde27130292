"""A limit the launcher runs into is worded as that limit (launcher/limits.py); the real launches under
each limit are in tests/faults/test_resource_limits.py."""

from __future__ import annotations

import errno
import resource

import pytest

from launcher.limits import exhausted_limit, open_files_problem


class DistStoreError(RuntimeError):
    """As torch's, which says a limit only in its text."""


def raised_from(cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise RuntimeError("the engine failed") from exc
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(("exc", "words"), [
    (OSError(errno.EMFILE, "Too many open files"), "the open-file limit (ulimit -n) of "),
    (DistStoreError("Failed to init uv loop"), "the open-file limit (ulimit -n) of "),
    (raised_from(DistStoreError("The server socket has failed to bind. code: -24, name: EMFILE")), "ulimit -n"),
    (OSError(errno.ENFILE, "Too many open files in system"), "the system's open-file table is full"),
    (MemoryError(), "memory"),
    (ImportError("libtorch_cpu.so: failed to map segment from shared object"), "memory"),
    (FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']"), "no usable folder for "),
])
def test_an_exception_that_says_a_limit_was_reached_is_that_limits_line(exc, words) -> None:
    line = exhausted_limit(exc)
    assert line is not None and words in line, line


@pytest.mark.parametrize("exc", [ValueError("a bug"), OSError(errno.EACCES, "Permission denied"), KeyError("x")])
def test_any_other_exception_is_no_limit(exc) -> None:
    assert exhausted_limit(exc) is None


def test_the_open_file_limit_is_judged_against_the_launcher_and_its_ranks() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert open_files_problem(0) is None  # this test process runs with a usable limit
    if soft != resource.RLIM_INFINITY:
        line = open_files_problem(soft)
        assert line is not None and f"is {soft}; accel-launch needs at least " in line
        assert f"for {soft} rank(s) on this node" in line
