"""A limit the launcher runs into is worded as that limit (launcher/limits.py); the real launches under
each limit are in tests/faults/test_resource_limits.py."""

from __future__ import annotations

import errno
import resource
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from launcher.limits import MIN_FILE_SIZE, exhausted_limit, file_size_problem, open_files_problem


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
    (OSError(errno.EFBIG, "File too large"), "the file-size limit (ulimit -f) of "),
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


@contextmanager
def file_size_limit(soft: int) -> Iterator[None]:
    """This process's soft file-size limit at `soft` bytes for the block (the hard one is left: it comes back)."""
    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, before)


@pytest.mark.parametrize(("soft", "refused"), [(0, True), (1000, True), (1024, False), (4096, False), (65536, False)])
def test_a_file_size_limit_refuses_only_below_what_the_launchers_own_files_need(soft, refused) -> None:
    # ulimit -f counts KiB: 1 KiB, the smallest above 0, runs; the logs are copies left incomplete at the limit.
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    if hard != resource.RLIM_INFINITY and soft > hard:
        pytest.skip("this process's hard limit is below the case")
    with file_size_limit(soft):
        line = file_size_problem()
    assert (line is not None) == refused, line
    if refused:
        assert line == (f"the file-size limit (ulimit -f) is {soft} bytes; accel-launch needs at least "
                        f"{MIN_FILE_SIZE} for its own small files: raise it, e.g. ulimit -f unlimited")
