"""The launcher's domain errors. Each words its own one-line message from the facts it holds, and carries its
exit status (`exit_status`, from the one table in launcher/contract/names.py), as click's exceptions carry theirs.

None of them imports click: the bootstrap and the library stay click-free, and `cli/command.py` writes every
`LaunchError` as one line and exits with the error's own status.
"""

from __future__ import annotations

from collections.abc import Sequence

from launcher.contract.names import VALIDATION_STATUS

__all__ = [
    "LaunchError",
    "UsageError",
    "LogsSpecsError",
    "FileLineError",
    "EnvFileError",
    "DsConfigError",
    "BackendRefusedError",
    "ScriptNotFoundError",
    "PortBusyError",
    "AcceleratorChoiceError",
    "RefusedFlagError",
    "FlagConflictError",
    "WorkingDirectoryError",
    "MultinodeError",
    "HostfileError",
    "SelectionError",
    "RemoteEnvError",
    "NodeIdentityError",
    "OpenFilesError",
    "NoJobError",
    "TorchMissingError",
]


class LaunchError(Exception):
    """A problem with what the user asked for; nothing was started."""

    exit_status: int = VALIDATION_STATUS


class UsageError(LaunchError):
    """A flag or value that cannot be used as given."""

    def __init__(self, option: str, value: object, expected: str) -> None:
        self.option, self.value, self.expected = option, value, expected
        super().__init__(f"invalid value for {option}: {_shown(value)} ({expected})")


class LogsSpecsError(LaunchError):
    """A --logs-specs plugin (the user's code, loaded by torch from its entry point) that could not be loaded."""

    def __init__(self, name: str, exc: BaseException) -> None:
        detail = " ".join(str(exc).split())[:300]
        super().__init__(f"--logs-specs {_shown(name)}: its entry point could not be loaded: {type(exc).__name__}"
                         f"{': ' + detail if detail else ''} (the plugin's own code; fix or uninstall it, or leave "
                         f"the flag out)")


def _shown(value: object, limit: int = 200) -> str:
    """`value` as the user would type it (repr), its middle left out when it is longer than `limit`."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-limit // 4:]} ({len(str(value))} characters)"


class FileLineError(LaunchError):
    """A file the user named that cannot be used, with the line of it that is wrong where there is one."""

    kind = "file"

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path, self.problem, self.line = path, problem, line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{self.kind} {where}: {problem}")


class EnvFileError(FileLineError):
    """An env file that is missing or has a line that is not `NAME=value`."""

    kind = "env file"


class DsConfigError(LaunchError):
    """A ds_config that cannot give a compile backend."""

    def __init__(self, path: str, problem: str, found_via: str) -> None:
        self.path, self.problem, self.found_via = path, problem, found_via
        super().__init__(f"ds_config {path} (from {found_via}): {problem}")


class BackendRefusedError(LaunchError):
    """The resolved compile backend is not supported here; the message is the accelerator's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ScriptNotFoundError(LaunchError):
    """The training script cannot be run as given."""

    def __init__(self, script: str, problem: str) -> None:
        self.script, self.problem = script, problem
        super().__init__(f"script {script!r}: {problem}")


class PortBusyError(LaunchError):
    """`--master-port` names a port that something else already listens on: bad input the user can fix, found
    before any rank starts, so the status of all bad input on either path (torchrun fails as its store cannot
    bind)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host, self.port = host, port
        super().__init__(
            f"--master-port {port} on {host} is busy ({reason}); "
            "pick another port or leave --master-port out to get a free one"
        )


class AcceleratorChoiceError(LaunchError):
    """An accelerator named by `--accelerator` or ACCEL_ACCELERATOR that cannot be used here."""

    def __init__(self, problem: str, source: str) -> None:
        self.problem, self.source = problem, source
        super().__init__(f"{source}: {problem}")


class RefusedFlagError(LaunchError):
    """A torchrun or DeepSpeed flag that accel-launch does not implement: why, and what to use instead."""

    def __init__(self, flag: str, why: str) -> None:
        self.flag, self.why = flag, why
        super().__init__(f"{flag} is not supported here: {why}")


class FlagConflictError(LaunchError):
    """A flag that cannot be used as given together with others; the problem says what to change."""

    def __init__(self, flag: str, problem: str) -> None:
        self.flag, self.problem = flag, problem
        super().__init__(f"{flag}: {problem}")


class WorkingDirectoryError(LaunchError):
    """The working directory, which every rank would start in, cannot be used (it was removed)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"the working directory cannot be used ({problem.lower()}: was it removed?); "
                         "cd to an existing folder and try again")


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
    """More runner processes than this process may hold open files for, even at its hard limit; `one_process`: the
    runners that start every node from one process."""

    def __init__(self, processes: int, needed: int, hard_limit: int, one_process: Sequence[str]) -> None:
        self.processes, self.needed, self.hard_limit = processes, needed, hard_limit
        *others, last = one_process
        either = f"{', '.join(others)} or {last}" if others else last
        super().__init__(f"starting {processes} runner processes needs {needed} open files, and this shell allows "
                         f"at most {hard_limit} (ulimit -Hn); raise the limit, or use --launcher {either}, which "
                         "start the nodes from one process")


class NoJobError(LaunchError):
    """`accel-launch stacks`: no job, or more than one, answers to what was given; the problem says what to type."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class TorchMissingError(LaunchError):
    """The Python that runs the launcher has no torch: its ranks, started with the same Python, would have none."""

    def __init__(self, python: str) -> None:
        super().__init__(f"torch is not installed for {python}: accel-launch starts PyTorch jobs with the Python "
                         "that runs it; install torch there (pip install torch) or run accel-launch from the "
                         "environment that has it")
