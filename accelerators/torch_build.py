"""What the installed torch was built for, read from its files without importing it.

Importing torch takes seconds; telling a CPU-only install apart from a CUDA, ROCm or XPU one takes a
look at `torch/version.py` and `torch/lib`. Each accelerator's `ruled_out(build)` uses this to rule
itself out, never in: whatever these files cannot rule out is left to the real detection, which imports
torch.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TorchBuild", "torch_build", "torch_found"]

# Libraries that only a build for that device ships in torch/lib.
_DEVICE_LIBRARIES = ("libtorch_cuda", "libc10_cuda", "libtorch_hip", "libc10_hip", "libtorch_xpu", "libc10_xpu")


@dataclass(frozen=True)
class TorchBuild:
    """The fields of `torch/version.py` (absent ones missing from `fields`) and the device libraries found."""

    path: str
    fields: dict[str, object]
    device_libraries: tuple[str, ...]

    def built_without(self, *names: str) -> bool:
        """True when version.py states None for every one of `names` and no device library is shipped."""
        return not self.device_libraries and all(name in self.fields and self.fields[name] is None for name in names)


def torch_found() -> bool:
    """Whether this Python finds torch on its path (without importing it)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:  # in sys.modules without a spec: imported, so found
        return True
    except ImportError:
        return False


@functools.cache
def torch_build() -> TorchBuild | None:
    """The installed torch's build, or None when torch cannot be found or its version.py cannot be read.

    Read once per process: a rank's detection and its facts key both ask for it."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    try:
        fields = _constants((root / "version.py").read_text(encoding="utf-8"))
        libraries = os.listdir(root / "lib")
    except (OSError, SyntaxError, ValueError):
        return None
    found = tuple(sorted(name for name in libraries if name.startswith(_DEVICE_LIBRARIES)))
    return TorchBuild(str(root), fields, found)


def _constants(source: str) -> dict[str, object]:
    """Module-level `name = literal` and `name: type = literal` assignments of `source`."""
    found: dict[str, object] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    return found
