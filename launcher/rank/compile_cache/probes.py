"""inductor's probes of the CPU's vector instructions, which travel with the job like the kernels of a graph.

A fresh inductor cache folder builds a small C++ library per instruction set (one g++ run each, about 8 s of CPU
for six on this project's 2-core machine) before a rank can compute its first graph's key, since the key holds
the instruction set they find. A library depends only on its source, the compiler, its flags and torch, which its
name (torch's hash) holds; torch only checks that it builds and loads, on each node itself. So the first rank of
the job that needs a library builds it and publishes it, signed, in the job's store; a rank of another node
receives it into its own cache folder before torch looks for it, then torch loads it as its own (docs/CONTRACT.md
section 7). Within a node, torch's own lock for the library makes one rank fetch it while the others wait.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from launcher.rank.compile_cache.graph_cache import count
from launcher.rank.compile_cache.job_share import JobShare
from launcher.shared_files import publish_file

__all__ = ["ProbeLibraries"]

_MAX_LIBRARY_BYTES = 64 << 20
_PREFIX = "isa-probe/"
# A probe's build takes a second or two; a rank that waited this long for another node's builds it itself.
_WAIT_SECONDS = 120


class ProbeLibraries:
    """`obtain` before torch builds a probe library, `built` after a build this rank claimed."""

    def __init__(self, job: Callable[[], JobShare | None]) -> None:
        self._job = job

    def obtain(self, name: str, library: Path) -> bool:
        """Place the job's copy of the library `name` at `library`, or wait for the rank of another node that
        builds it; True when this rank claimed the build (then `built` must follow)."""
        job = self._job() if not library.exists() else None
        if job is None:
            return False
        key = _PREFIX + name
        copy = job.fetch(key)
        if copy is None:
            claimer = job.claim(key)
            if claimer is None:
                return True
            copy = job.wait_for(key, claimer, _WAIT_SECONDS)
        if copy is not None:
            try:
                publish_file(library, copy)
            except OSError:
                return False
            count("probe_libraries_fetched")
        return False

    def built(self, name: str, library: Path) -> None:
        """Publish the library this rank claimed and built, or tell the waiting ranks that none is coming."""
        job = self._job()
        if job is None:
            return
        try:
            data = library.read_bytes() if library.is_file() and library.stat().st_size <= _MAX_LIBRARY_BYTES \
                else None
        except OSError:
            data = None
        if data:
            job.publish(_PREFIX + name, data)
        else:
            job.give_up(_PREFIX + name)
