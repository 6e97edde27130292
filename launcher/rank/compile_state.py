"""Whether a rank is inside torch.compile, for the launcher's stacks report (docs/CONTRACT.md section 8).

When the user's code imports torch._dynamo (nothing before: a rank that never compiles pays nothing), dynamo's own
compile callbacks (`torch._dynamo.callback_handler`, on_compile_start and on_compile_end) are given two functions
that replace this rank's tiny state file in the launcher's folder, whole (`publish_file`): `compiling`, with the
frame being compiled and how many times it was compiled before, at a compile's start; `idle`, with the rank's count
of compiled graphs, at its end. Compiles are rare, so a file write at each costs nothing that shows. A process the
rank forks writes nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from launcher.contract.names import COMPILE_STATE_FILE, STACKS_DIR_VAR
from launcher.rank.after_import import after_import
from launcher.rank.torch_seams import holder
from launcher.shared_files import UnsafeFileError, publish_file, read_user_bytes

__all__ = ["note_compiles", "read_compile_state"]

_STATE_BYTES = 4096  # the most of a state file that is read: what a rank writes is far less

_FRAMES_UP = 40  # how far up from the callback dynamo's `_compile`, which holds the code being compiled, may be


def note_compiles() -> None:
    """Give dynamo's compile callbacks this rank's state file, once the user's code imports torch._dynamo."""
    folder = os.environ.get(STACKS_DIR_VAR)
    if folder:
        path = os.path.join(folder, COMPILE_STATE_FILE.format(rank=os.environ.get("RANK", "0")))
        after_import("torch._dynamo", _CompileState(path).register)


def read_compile_state(folder: Path, rank: int) -> Mapping[str, object] | None:
    """What rank `rank` last wrote of its compiles in `folder`, read as untrusted input (without blocking, a regular
    file reached through no link, bounded); None when nothing readable."""
    try:
        state = json.loads(read_user_bytes(str(folder / COMPILE_STATE_FILE.format(rank=rank)), _STATE_BYTES,
                                           follow_symlinks=False))
    except (UnsafeFileError, ValueError, RecursionError):
        return None
    return state if isinstance(state, dict) else None


class _CompileState:
    """The rank's state file: rewritten at each compile's start and end."""

    def __init__(self, path: str) -> None:
        self._path: str | None = path
        self._compiles = 0

    def register(self, dynamo: ModuleType) -> None:
        """Two values set on dynamo's callback handler, where this torch has it (launcher.rank.torch_seams); nothing
        imported."""
        start, end = holder("compile_callbacks", dynamo), holder("compile_end_callbacks", dynamo)
        if start is None or end is None:
            return
        getattr(*start)(self.started)
        getattr(*end)(self.ended)
        os.register_at_fork(after_in_child=self._leave_to_the_rank)

    def started(self, args: Any) -> None:
        """A compile starts: the frame dynamo compiles, and its compile count (CompileId `frame/count`)."""
        _, _, count = str(args.compile_id).partition("/")
        self._write({"state": "compiling", "frame": _compiled_frame(), "recompile": int(count or 0),
                     "graphs": self._graphs()})

    def ended(self, _args: Any) -> None:
        """A compile ended: the rank's count of compiled graphs."""
        self._compiles += 1
        self._write({"state": "idle", "graphs": self._graphs()})

    def _graphs(self) -> int:
        """dynamo's own count of the graphs this process compiled (its `unique_graphs`), else the compiles seen."""
        utils = sys.modules.get("torch._dynamo.utils")
        try:
            return int(utils.counters["stats"]["unique_graphs"])  # type: ignore[union-attr]
        except (AttributeError, KeyError, TypeError, ValueError):
            return self._compiles

    def _write(self, state: dict[str, object]) -> None:
        """The state, whole (a temporary file renamed over the old one: whatever lay at the path, a FIFO or a link
        the program put there, is replaced, never opened)."""
        if self._path is None:
            return
        try:
            publish_file(self._path, json.dumps(state))
        except OSError:  # never a reason for the user's compile to fail (a folder at the path, the folder gone)
            pass

    def _leave_to_the_rank(self) -> None:
        self._path = None


def _compiled_frame() -> str | None:
    """`file:line name` of the code dynamo is compiling: the `code` its `_compile` holds, up the stack from here."""
    frame = sys._getframe(1)
    for _ in range(_FRAMES_UP):
        if frame is None:
            return None
        if frame.f_code.co_name == "_compile":
            code = frame.f_locals.get("code")
            if isinstance(code, CodeType):
                return f"{code.co_filename}:{code.co_firstlineno} {code.co_name}"
        frame = frame.f_back
    return None
