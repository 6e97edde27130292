"""DeepSpeed's pass-through flags for the runner of a hostfile launch (deepspeed/launcher/runner.py and
multinode_runner.py), each with DeepSpeed's meaning and never through a local shell:

- `--launcher_args "ARGS"`: one string, split as a POSIX shell splits words (`shlex.split`, as DeepSpeed does),
  whose words go to the runner program as arguments: ssh's and pdsh's before the command, mpirun's and srun's
  before the node launcher;
- `--comment TEXT`, `--account NAME`: srun's own `--comment` and `--account` (Slurm runner only);
- `--venv_script PATH`: sourced on every node before the node launcher starts, through
  `sh -c '. "$0" && exec "$@"' PATH ...`, where PATH is an argument, never part of the script (over ssh and
  pdsh each word is quoted once for the remote shell, and the variables sent are set after the sourcing, as
  DeepSpeed exports them after it; mpirun and srun set theirs before it). A relative path is taken from the
  working directory the nodes start in.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from launcher.errors import MultinodeError

__all__ = ["RunnerOptions", "SOURCE_THEN_EXEC"]

# A fixed script: the venv script's path arrives as $0 and the node launcher's argv as "$@".
SOURCE_THEN_EXEC = '. "$0" && exec "$@"'
_SRUN_ONLY = (("comment", "--comment"), ("account", "--account"))


@dataclass(frozen=True)
class RunnerOptions:
    """The runner pass-through flags as given ("" or None: not given)."""

    launcher_args: str = ""
    comment: str = ""
    account: str = ""
    venv_script: str | None = None

    def check(self, runner: str) -> None:
        """One MultinodeError for what `runner` cannot take: srun's flags elsewhere, unbalanced quotes, an empty
        venv script."""
        for name, flag in _SRUN_ONLY:
            if getattr(self, name) and runner != "slurm":
                raise MultinodeError(f"{flag} is srun's (DeepSpeed passes it to srun alone): give --launcher slurm, "
                                     f"or drop {flag}")
        self.extra_args(runner)
        if self.venv_script is not None and not self.venv_script.strip():
            raise MultinodeError("--venv_script: give the path of a script to source on every node, or drop the flag")

    def extra_args(self, runner: str) -> list[str]:
        """The words added to the runner's command: `--launcher_args`'s, then srun's `--comment` / `--account`."""
        try:
            words = shlex.split(self.launcher_args)
        except ValueError as exc:
            raise MultinodeError(f"--launcher_args {self.launcher_args!r}: {exc} (it is split as a shell splits "
                                 "words; quote each argument that holds spaces)") from None
        if runner == "slurm":
            words += [word for name, flag in _SRUN_ONLY if getattr(self, name) for word in (flag, getattr(self, name))]
        return words

    def wrapper(self) -> list[str]:
        """The words that start a command after sourcing the venv script (none without one)."""
        if self.venv_script is None:
            return []
        # `.` looks a name without a slash up on PATH; DeepSpeed's bash `source` falls back to the directory.
        script = self.venv_script if "/" in self.venv_script else f"./{self.venv_script}"
        return ["sh", "-c", SOURCE_THEN_EXEC, script]
