"""Checks of the launch options that need no user code, made before anything starts (docs/RELIABILITY.md).

These are the values torch elastic would only trip over after the launcher had begun: numbers that are
not finite or too large for a timer, endpoints and names it cannot parse, a script that is not a file,
a log folder that cannot be made.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from importlib.machinery import PathFinder
from pathlib import Path

from launcher.contract.flag_field import check_flags
from launcher.contract.job_config import Program
from launcher.contract.run_settings import RunSettings
from launcher.errors import ScriptNotFoundError, UsageError, WorkingDirectoryError
from launcher.prepare.executable import program_problem
from launcher.prepare.options import LaunchOptions
from launcher.safe_read import UnsafeFileError, read_user_bytes

__all__ = ["check_options", "check_settings", "check_program", "working_directory", "MAX_SCRIPT_BYTES"]

MAX_SCRIPT_BYTES = 64 << 20
_NOT_SOURCE = {".pyc", ".pyz", ".zip"}
_ZIP_MAGIC = b"PK\x03\x04"
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def check_options(options: LaunchOptions, cwd: Path, head: bool = False) -> None:
    """Raise LaunchError (UsageError, ScriptNotFoundError) for the first option that cannot work: each option's
    own check (declared on its field), then those of several options together.

    `head`: this launcher starts node launchers from a hostfile (they get an endpoint, so c10d).
    """
    settings = options.settings
    check_flags(options)
    check_settings(settings)
    if settings.rdzv_backend == "static" and ":" in options.nnodes:
        raise UsageError("--nnodes", options.nnodes, "--rdzv-backend static needs a fixed node count")
    by_port = settings.master_port is not None and not options.rdzv_endpoint and not head
    static = settings.rdzv_backend == "static" or by_port
    if static and settings.max_restarts > 0:
        raise UsageError("--max-restarts", settings.max_restarts, "restarts need the c10d rendezvous, and --master-port "
                         "or --rdzv-backend static selects the static one; use --rdzv-endpoint HOST:PORT instead")
    check_program(options.program, cwd)


def check_settings(settings: RunSettings) -> None:
    """What the settings need of this machine (each value's own check runs as RunSettings is made): checked by
    the head, and again by each node on the job it got."""
    if settings.log_dir is not None:
        _log_dir(settings.log_dir)


def working_directory() -> Path:
    """The working directory, which the ranks start in; WorkingDirectoryError when it was removed."""
    try:
        return Path.cwd()
    except OSError as exc:
        raise WorkingDirectoryError(exc.strerror or str(exc)) from None


def _log_dir(value: str) -> None:
    """The folder can be made: its nearest existing folder takes a new folder now (one made and removed at once:
    /proc, /sys or a read-only mount refuse it, whatever their modes say), and no name on the way is a symbolic
    link to nothing or a loop of links."""
    path = Path(value).absolute()
    try:
        existing = None
        for candidate in (path, *path.parents):
            if candidate.exists():
                existing = candidate
                break
            if os.path.lexists(candidate):
                raise UsageError("--log-dir", value, f"{candidate} is a symbolic link to nothing, or a loop of links")
    except OSError as exc:  # a name too long for the file system
        raise UsageError("--log-dir", value, f"cannot be made ({exc.strerror or exc})") from None
    if existing is None or not existing.is_dir():
        raise UsageError("--log-dir", value, f"{existing} is not a folder" if existing else "cannot be made")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".accel-launch-probe-", dir=existing))
    except OSError as exc:
        raise UsageError("--log-dir", value, f"cannot be made in {existing} ({exc.strerror or exc})") from None


def check_program(program: Program, cwd: Path) -> None:
    """The program can run here: a readable regular script file that compiles (a FIFO would block every
    rank), a module that can be found, or a program on PATH (--no-python)."""
    if program.mode == "module":
        _module(program.target, cwd)
    elif program.mode == "exec":
        found = shutil.which(program.target)
        if found is None:
            raise ScriptNotFoundError(program.target, "no such program on PATH (--no-python runs it directly)")
        problem = program_problem(found)
        if problem is not None:
            raise ScriptNotFoundError(program.target, f"{problem} (--no-python runs it directly)")
    else:
        _script(program.target, cwd / program.target)


def _script(target: str, path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ScriptNotFoundError(target, "no such file") from None
    except OSError as exc:
        raise ScriptNotFoundError(target, exc.strerror.lower() if exc.strerror else "cannot be read") from None
    if stat.S_ISDIR(mode):
        raise ScriptNotFoundError(target, "is a directory; give the script file inside it, or use -m")
    if not stat.S_ISREG(mode):
        raise ScriptNotFoundError(target, "is not a regular file (a FIFO, device or socket)")
    if not os.access(path, os.R_OK):
        raise ScriptNotFoundError(target, "permission denied")
    _compiles(target, path)


def _module(name: str, cwd: Path) -> None:
    """A dotted name that `python -m` can run, found without importing anything: each part in the folders of the
    package before it, and a package's `__main__`; the refusal says what python would."""
    if not _MODULE.fullmatch(name):
        raise ScriptNotFoundError(name, "not a module name (-m takes dotted Python names)")
    top, *parts = name.split(".")
    if top in sys.builtin_module_names:
        return
    spec = PathFinder.find_spec(top, [str(cwd), *sys.path])
    if spec is None:
        raise ScriptNotFoundError(name, f"no module named {top!r} here or on the Python path")
    for found, part in enumerate(parts, start=1):
        folders = spec.submodule_search_locations
        spec = PathFinder.find_spec(part, list(folders)) if folders is not None else None
        if spec is None:
            raise ScriptNotFoundError(name, f"no module named {'.'.join([top, *parts[:found]])!r}")
    if spec.submodule_search_locations is not None:
        if PathFinder.find_spec("__main__", list(spec.submodule_search_locations)) is None:
            raise ScriptNotFoundError(name, f"no module named '{name}.__main__'; '{name}' is a package and cannot "
                                            "be directly executed")


def _compiles(target: str, path: Path) -> None:
    """A Python source script that does not compile is refused with its line, as python would say it."""
    try:
        source = read_user_bytes(str(path), MAX_SCRIPT_BYTES)
    except UnsafeFileError as exc:
        raise ScriptNotFoundError(target, str(exc)) from None
    if path.suffix in _NOT_SOURCE or source.startswith(_ZIP_MAGIC):
        return
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise ScriptNotFoundError(target, f"{type(exc).__name__}{where}: {exc.msg}") from None
    except ValueError as exc:
        raise ScriptNotFoundError(target, f"cannot be compiled ({exc})") from None
