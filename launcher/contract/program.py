"""What each rank runs: the user's program (a script, a module, any program) and the command line that runs it
under the launcher's bootstrap (launcher/rank/bootstrap.py reads it back). The dry-run's plan table shows that
command line, and both launch paths start every rank with it."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Program", "PROGRAM_MODES", "PROGRAM_PREFIX", "rank_command"]

PROGRAM_MODES = ("script", "module", "exec")
# How each mode is written after the launcher's own options.
PROGRAM_PREFIX = {"script": (), "module": ("-m",), "exec": ("--no-python",)}


@dataclass(frozen=True)
class Program:
    """What each rank runs: a script, a module (`-m`), or any program (`--no-python`)."""

    mode: str
    target: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in PROGRAM_MODES:
            raise ValueError(f"program mode must be one of {PROGRAM_MODES}, got {self.mode!r}")

    def import_folder(self, cwd: Path) -> Path:
        """Where the program's own imports look first, as python's sys.path[0]: the script's folder, else the
        working directory (launcher.rank.bootstrap gives every rank the same)."""
        return (cwd / self.target).parent if self.mode == "script" else cwd

    def describe(self) -> str:
        """The program as a user would type it after the launcher's options."""
        return shlex.join([*PROGRAM_PREFIX[self.mode], self.target, *self.args])


def rank_command(program: Program) -> list[str]:
    """The argv each rank runs: the bootstrap (`-P`: not found in the user's folder), then the user's program."""
    return [sys.executable, "-P", "-m", "launcher.rank.bootstrap", program.mode, program.target, *program.args]
