"""The multi-node building blocks' domain errors; each words its own one-line message.

They are `LaunchError`s, so `cli/command.py` maps them to exit status 2 with no traceback, and `ValueError`s, so
code that knows nothing of the launcher can still catch them.
"""

from __future__ import annotations

from launcher.errors import FileLineError, LaunchError

__all__ = ["MultinodeError", "HostfileError", "SelectionError", "RemoteEnvError", "NodeIdentityError",
           "OpenFilesError"]


class MultinodeError(LaunchError, ValueError):
    """A multi-node setting that cannot be used as given; nothing was started."""


class HostfileError(FileLineError, MultinodeError):
    """A hostfile that cannot be read, or a line of it that is not `host slots=N`."""

    kind = "hostfile"


class SelectionError(MultinodeError):
    """An `--include` / `--exclude` / `--num-nodes` / `--num-gpus` value that selects nothing sensible."""

    def __init__(self, flag: str, part: str, problem: str) -> None:
        self.flag, self.part, self.problem = flag, part, problem
        super().__init__(f"{flag} {part!r}: {problem}")


class RemoteEnvError(MultinodeError):
    """A variable that cannot be sent to the nodes: a bad name, an unset `--export`, a bad `.accel_env` line."""

    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem
        super().__init__(f"{where}: {problem}")


class NodeIdentityError(MultinodeError):
    """An environment variable that should say which node this is, but holds something malformed."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable, self.value, self.expected = variable, value, expected
        super().__init__(f"{variable}={value!r}: {expected}")


class OpenFilesError(MultinodeError):
    """More runner processes than this process may hold open files for, even at its hard limit."""

    def __init__(self, processes: int, needed: int, hard_limit: int) -> None:
        self.processes, self.needed, self.hard_limit = processes, needed, hard_limit
        super().__init__(f"starting {processes} runner processes needs {needed} open files, and this shell allows "
                         f"at most {hard_limit} (ulimit -Hn); raise the limit, or use --launcher pdsh, openmpi or "
                         "slurm, which start the nodes from one process")
