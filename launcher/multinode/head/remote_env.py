"""The environment sent to every node, a later source winning for the same name: what DeepSpeed's launcher
sends (launcher.multinode.head.deepspeed_env: the head's NCCL*, PYTHON*, UCX*, MV2*, MLFLOW* variables, then
`.deepspeed_env` from the home directory and the working directory), then `.accel_env` entries, then the
ACCEL_* variables set here, then the variables named by `--export`.

`.accel_env` works like DeepSpeed's `.deepspeed_env`: `NAME=value` lines (blank lines and `#` comments
allowed; the value is taken verbatim, no quotes are removed), read from the working directory, else from
the home directory; only the first file found is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from launcher.contract.names import HEAD_VARS, INTERNAL_VARS
from launcher.errors import RemoteEnvError
from launcher.multinode.head.deepspeed_env import deepspeed_env_files, parse_deepspeed_env, prefixed_variables
from launcher.resolve.variable_names import name_problem
from launcher.shared_files import ForeignFileError, UnsafeFileError, read_user_text

__all__ = ["ENV_FILE_NAME", "find_env_file", "parse_env_file_text", "remote_env"]

ENV_FILE_NAME = ".accel_env"


def remote_env(environ: Mapping[str, str], exports: Sequence[str] = (), cwd: Path | None = None,
               home: Path | None = None, accelerator: str | None = None) -> dict[str, str]:
    """The ordered name -> value mapping for the nodes; `cwd` / `home` default to the process's own."""
    cwd, home = Path.cwd() if cwd is None else cwd, Path.home() if home is None else home
    env = prefixed_variables(environ, accelerator)
    for name in env:
        _check_name(name, f"environment variable {name!r} (sent to the nodes, as DeepSpeed's launcher sends it)")
    for path in deepspeed_env_files(environ, cwd, home):
        env.update(parse_deepspeed_env(_read(path), str(path), RemoteEnvError))
    env_file = find_env_file(cwd, home)
    env.update({} if env_file is None else parse_env_file_text(_read(env_file), str(env_file)))
    for name in [name for name in environ if name.startswith("ACCEL_") and name not in (*INTERNAL_VARS, *HEAD_VARS)]:
        _check_name(name, f"environment variable {name!r}")
        env[name] = environ[name]
    for name in exports:
        _check_name(name, f"--export {name!r}")
        if name not in environ:
            raise RemoteEnvError(f"--export {name}", "is not set in this environment; set it or drop the flag")
        env[name] = environ[name]
    return env


def _check_name(name: str, where: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        raise RemoteEnvError(where, problem.removeprefix("is "))


def find_env_file(cwd: Path, home: Path) -> Path | None:
    """The `.accel_env` that applies: the working directory's, else the home directory's, else None."""
    return next((path for path in (cwd / ENV_FILE_NAME, home / ENV_FILE_NAME) if path.is_file()), None)


def _read(path: Path) -> str:
    """A file the launcher found, not one the user named: another user's, or one others may write, is refused."""
    try:
        return read_user_text(str(path), unshared=True)
    except ForeignFileError as exc:
        raise RemoteEnvError(str(path), f"{exc}; another user could have written it: make it your own (chown, "
                                        f"chmod o-w) to send its variables") from None
    except UnsafeFileError as exc:
        raise RemoteEnvError(str(path), str(exc)) from None


def parse_env_file_text(text: str, path: str = ENV_FILE_NAME) -> dict[str, str]:
    """Parse `.accel_env` text; `path` only names the file in error messages."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise RemoteEnvError(f"{path}:{number}", f"expected NAME=value, got {line!r}")
        _check_name(name.strip(), f"{path}:{number}: {name.strip()!r}")
        env[name.strip()] = value
    return env
