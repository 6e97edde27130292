"""The C++ kernels a compiled graph loads, which travel with it: on CPU a cached graph holds only its kernels'
source, so a node that received the graph alone would still build every kernel with the C++ compiler.

A rank that compiles a graph notes every library inductor loads from its cache folder until the graph is stored
(`noting`, `loaded`, `taken`); a rank that receives the graph puts the libraries at the same places in its own
cache folder first (`place`), where inductor finds them built. On GPU, triton's kernels travel inside the graph's
entry already (torch's `bundle_triton_into_fx_graph_cache`).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from launcher.shared_files import publish_file

__all__ = ["KernelFiles"]

_MAX_KERNEL_BYTES = 512 << 20


class KernelFiles:
    """The kernel libraries one compile loaded, relative to the cache folder `root`."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._noted: list[str] | None = None

    def noting(self) -> None:
        """Start noting the libraries loaded, for the graph this rank now compiles."""
        self._noted = []

    def loaded(self, path: str) -> None:
        """inductor loaded the library at `path`: noted when it lies in the cache folder."""
        if self._noted is None:
            return
        try:
            relative = Path(os.path.abspath(path)).relative_to(self._root)
        except ValueError:
            return
        if str(relative) not in self._noted:
            self._noted.append(str(relative))

    def taken(self) -> dict[str, bytes]:
        """The libraries noted since `noting`, read; the noting ends."""
        noted, self._noted = self._noted or [], None
        files = {}
        for relative in noted:
            path = self._root / relative
            try:
                if path.is_file() and path.stat().st_size <= _MAX_KERNEL_BYTES:
                    files[relative] = path.read_bytes()
            except OSError:
                continue
        return files

    def place(self, files: dict[str, bytes]) -> None:
        """Put received libraries where inductor looks for them; a name that would leave the folder is skipped."""
        for relative, data in files.items():
            parts = PurePosixPath(relative).parts
            if not parts or PurePosixPath(relative).is_absolute() or any(part in ("", ".", "..") for part in parts):
                continue
            target = self._root.joinpath(*parts)
            if target.exists():
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                publish_file(target, data)
            except OSError:
                continue
