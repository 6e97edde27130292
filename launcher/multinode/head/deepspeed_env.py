"""What DeepSpeed's launcher sends every node of a multi-node job besides its own (deepspeed/launcher/runner.py,
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

from collections.abc import Callable, Mapping
from pathlib import Path

from accelerators import accelerator_class
from launcher.resolve.variable_names import NAME_RULE, is_variable_name

__all__ = ["prefixed_variables", "deepspeed_env_files", "parse_deepspeed_env", "DS_ENV_FILE_VAR"]

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
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise problem(f"{where}:{number}", f"expected NAME=value, got {line.strip()[:60]!r}")
        if not is_variable_name(name.strip()):
            raise problem(f"{where}:{number}: {name.strip()[:60]!r}", NAME_RULE)
        env[name.strip()] = value.strip()
    return env
