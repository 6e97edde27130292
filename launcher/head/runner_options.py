"""The runner flags of a hostfile launch as given: `--ssh-port`, `--ssh-option`, and DeepSpeed's pass-through
flags (deepspeed/launcher/runner.py and multinode_runner.py), each with DeepSpeed's meaning and never through a
local shell. Where each goes is its runner's rule (launcher.head.runners):

- `--launcher_args "ARGS"`: one string, split as a POSIX shell splits words (`shlex.split`, as DeepSpeed does),
  whose words go to the runner program as arguments;
- `--comment TEXT`, `--account NAME`: flags of one runner's program, passed on to it (its `own_flags`);
- `--venv_script PATH`: sourced on every node before the node launcher starts, through
  `sh -c '. "$0" && exec "$@"' PATH ...`, where PATH is an argument, never part of the script (through a remote
  shell each word is quoted once for it, and the variables sent are set after the sourcing, as DeepSpeed exports
  them after it; a runner program that exports them itself sets them before it). A relative path is taken from
  the working directory the nodes start in.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from launcher.errors import MultinodeError

__all__ = ["RunnerOptions", "SOURCE_THEN_EXEC"]

# A fixed script: the venv script's path arrives as $0 and the node launcher's argv as "$@".
SOURCE_THEN_EXEC = '. "$0" && exec "$@"'


@dataclass(frozen=True)
class RunnerOptions:
    """The runner flags as given ("", (), or None: not given); which runner takes which is the runner's rule
    (launcher.head.runners)."""

    launcher_args: str = ""
    comment: str = ""
    account: str = ""
    venv_script: str | None = None
    ssh_port: int | None = None
    ssh_options: tuple[str, ...] = ()

    def check(self) -> None:
        """One MultinodeError for flags no runner can take: unbalanced quotes, an empty venv script."""
        self.launcher_words()
        if self.venv_script is not None and not self.venv_script.strip():
            raise MultinodeError("--venv_script: give the path of a script to source on every node, or drop the flag")

    def launcher_words(self) -> list[str]:
        """`--launcher_args`'s words."""
        try:
            return shlex.split(self.launcher_args)
        except ValueError as exc:
            raise MultinodeError(f"--launcher_args {self.launcher_args!r}: {exc} (it is split as a shell splits "
                                 "words; quote each argument that holds spaces)") from None

    def wrapper(self) -> list[str]:
        """The words that start a command after sourcing the venv script (none without one)."""
        if self.venv_script is None:
            return []
        # `.` looks a name without a slash up on PATH; DeepSpeed's bash `source` falls back to the directory.
        script = self.venv_script if "/" in self.venv_script else f"./{self.venv_script}"
        return ["sh", "-c", SOURCE_THEN_EXEC, script]
