"""The environment sent to every node, a later source winning for the same name: what DeepSpeed's launcher sends
(`prefixed_variables` and `deepspeed_env_files`, below: the head's NCCL*, PYTHON*, UCX*, MV2*, MLFLOW* variables,
then `.deepspeed_env` from the home directory and the working directory), then `.accel_env` entries, then the ACCEL_*
variables set here, then the variables named by `--export`.

`.accel_env` works like DeepSpeed's `.deepspeed_env`: `NAME=value` lines (blank lines and `#` comments
allowed; the value is taken verbatim, no quotes are removed), read from the working directory, else from
the home directory; only the first file found is read.

What DeepSpeed's launcher sends every node of a multi-node job besides its own (deepspeed/launcher/runner.py,
0.19), so that a DeepSpeed user's `NCCL_SOCKET_IFNAME` or `.deepspeed_env` reaches the nodes here too:

- the head's variables whose names begin with `NCCL`, `PYTHON`, `UCX`, `MV2` or `MLFLOW`, or with one of the
  accelerator's own prefixes (DeepSpeed's `export_envs()`, the accelerator class's `export_env_prefixes`: npu's
  `ASCEND`, `HCCL`, `LD_LIBRARY`, `PATH`; the launcher spells no device fact of its own), less `NCCL_IB_HCA`
  and `UCX_NET_DEVICES` where `AISC_JOB_NAME` is set, as DeepSpeed leaves them out;
- the `NAME=value` lines of `.deepspeed_env` (or of the file `DS_ENV_FILE` names) in the home directory,
  then in the working directory, the later winning; name and value stripped of surrounding blanks, as
  DeepSpeed takes them. Blank lines and `#` comments are skipped; another line without `=`, or with a name
  that is no variable name, is an error naming the file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from accelerators import accelerator_class
from launcher.contract.names import HEAD_VARS, INTERNAL_VARS
from launcher.errors import RemoteEnvError
from launcher.contract.variable_names import NAME_RULE, is_variable_name, name_problem
from launcher.shared_files import ForeignFileError, UnsafeFileError, read_user_text

__all__ = ["ENV_FILE_NAME", "find_env_file", "parse_env_file_text", "remote_env", "prefixed_variables",
           "deepspeed_env_files", "parse_deepspeed_env", "DS_ENV_FILE_VAR"]

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
    for place, line, name, value in _assignments(text, path):
        if value is None:
            raise RemoteEnvError(place, f"expected NAME=value, got {line!r}")
        _check_name(name, f"{place}: {name!r}")
        env[name] = value
    return env


def _assignments(text: str, where: str) -> Iterator[tuple[str, str, str, str | None]]:
    """(`where:line number`, the line, its name, its value as written) for each line of an env file but blank
    lines and `#` comments; the value is None on a line without `=`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, equals, value = line.partition("=")
        yield f"{where}:{number}", line, name.strip(), value if equals else None


EXPORT_PREFIXES = ("NCCL", "PYTHON", "UCX", "MV2", "MLFLOW")
EXCLUDED_WHERE_SET = {"AISC_JOB_NAME": ("NCCL_IB_HCA", "UCX_NET_DEVICES")}
DS_ENV_FILE_VAR = "DS_ENV_FILE"
DEFAULT_FILE_NAME = ".deepspeed_env"


def prefixed_variables(environ: Mapping[str, str], accelerator: str | None) -> dict[str, str]:
    """The head's variables DeepSpeed's launcher exports to the nodes, in the environment's order."""
    device = accelerator_class(accelerator) if accelerator is not None else None
    prefixes = EXPORT_PREFIXES + (device.export_env_prefixes if device is not None else ())
    excluded = {name for key, names in EXCLUDED_WHERE_SET.items() if key in environ for name in names}
    return {name: value for name, value in environ.items() if name.startswith(prefixes) and name not in excluded}


def deepspeed_env_files(environ: Mapping[str, str], cwd: Path, home: Path) -> list[Path]:
    """The `.deepspeed_env` files DeepSpeed reads, in its order (home, then the working directory); one file
    that is both is read once."""
    name = environ.get(DS_ENV_FILE_VAR) or DEFAULT_FILE_NAME
    found: list[Path] = []
    for path in (home / name, cwd / name):
        if path.is_file() and all(path.resolve() != seen.resolve() for seen in found):
            found.append(path)
    return found


def parse_deepspeed_env(text: str, where: str, problem: Callable[[str, str], Exception]) -> dict[str, str]:
    """The `NAME=value` lines of a `.deepspeed_env` at `where`; a line without `=`, or whose name is no variable
    name, raises `problem(place, why)`."""
    env: dict[str, str] = {}
    for place, line, name, value in _assignments(text, where):
        if value is None:
            raise problem(place, f"expected NAME=value, got {line.strip()[:60]!r}")
        if not is_variable_name(name):
            raise problem(f"{place}: {name[:60]!r}", NAME_RULE)
        env[name] = value.strip()
    return env
