"""Checks of the launch options that need no user code, made before anything starts (docs/RELIABILITY.md).

These are the values torch elastic would only trip over after the launcher had begun: numbers that are
not finite or too large for a timer, endpoints and names it cannot parse, a script that is not a file,
a log folder that cannot be made.

Whether the system can run a `--no-python` program is judged from its first bytes, as the kernel's exec does: a
`#!` script needs its interpreter (followed, as Linux does, through up to four nested `#!` lines), and
an ELF binary needs all of its header and program headers: a truncated file fails in exec. Other formats
(binfmt_misc) are left to exec, whose failure each rank reports in one line.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import struct
import sys
import tempfile
from importlib.machinery import PathFinder
from pathlib import Path

from launcher.contract.flag_field import check_flags
from launcher.contract.program import Program
from launcher.contract.run_settings import RunSettings
from launcher.errors import ScriptNotFoundError, UsageError, WorkingDirectoryError
from launcher.job.options import LaunchOptions
from launcher.shared_files import UnsafeFileError, read_user_bytes, read_user_start

__all__ = ["check_options", "check_settings", "check_program", "check_folder", "working_directory",
           "MAX_SCRIPT_BYTES", "program_problem"]

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
        check_folder(settings.log_dir, "--log-dir")


def working_directory() -> Path:
    """The working directory, which the ranks start in; WorkingDirectoryError when it was removed."""
    try:
        return Path.cwd()
    except OSError as exc:
        raise WorkingDirectoryError(exc.strerror or str(exc)) from None


def check_folder(value: str, source: str) -> None:
    """The folder `value` names (given as `source`: --log-dir, TORCHINDUCTOR_CACHE_DIR) can be made, or is one: its
    nearest existing folder takes a new folder now (one made and removed at once: /proc, /sys or a read-only mount
    refuse it, whatever their modes say), and no name on the way is a file, a symbolic link to nothing or a loop of
    links. UsageError naming `source` otherwise."""
    path = Path(value).absolute()
    try:
        existing = None
        for candidate in (path, *path.parents):
            if candidate.exists():
                existing = candidate
                break
            if os.path.lexists(candidate):
                raise UsageError(source, value, f"{candidate} is a symbolic link to nothing, or a loop of links")
    except OSError as exc:  # a name too long for the file system
        raise UsageError(source, value, f"cannot be made ({exc.strerror or exc})") from None
    if existing is None or not existing.is_dir():
        raise UsageError(source, value, f"{existing} is not a folder" if existing else "cannot be made")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".accel-launch-probe-", dir=existing))
    except OSError as exc:
        raise UsageError(source, value, f"cannot be made in {existing} ({exc.strerror or exc})") from None


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


_HEAD_BYTES = 256  # the kernel reads as much of a file to decide how to run it
_MAX_NESTING = 4
_ELF_MAGIC = b"\x7fELF"
# ELF class -> (header size, offset of e_phoff, its struct format, offset of e_phentsize and e_phnum)
_ELF_LAYOUT = {1: (52, 28, "I", 42), 2: (64, 32, "Q", 54)}
_ELF_ORDER = {1: "<", 2: ">"}


def program_problem(path: str, nesting: int = 0) -> str | None:
    """Why exec cannot run the program at `path` (a few words), or None when nothing is known to be wrong."""
    if not os.access(path, os.R_OK):
        return None  # an execute-only binary: exec can run what the launcher cannot read
    try:
        head, size = read_user_start(path, _HEAD_BYTES)
    except UnsafeFileError as exc:
        return str(exc)
    if head.startswith(b"#!"):
        return _interpreter_problem(head, nesting)
    if head.startswith(_ELF_MAGIC):
        return _elf_problem(head, size)
    return None


def _interpreter_problem(head: bytes, nesting: int) -> str | None:
    # As the kernel reads it: the line ends at a newline or NUL, and only spaces and tabs separate, so a '\r'
    # (a Windows line end) is part of the interpreter's name.
    line = head[2:].split(b"\n", 1)[0].split(b"\0", 1)[0].strip(b" \t")
    if not line:
        return "its #! line names no interpreter"
    interpreter = os.fsdecode(line.replace(b"\t", b" ").split(b" ", 1)[0])
    if nesting >= _MAX_NESTING:
        return f"its #! lines nest deeper than {_MAX_NESTING} interpreters"
    try:
        mode = os.stat(interpreter).st_mode
    except OSError as exc:
        return f"its interpreter {interpreter!r} (from its #! line): {(exc.strerror or 'cannot be used').lower()}"
    if not stat.S_ISREG(mode) or not os.access(interpreter, os.X_OK):
        return f"its interpreter {interpreter!r} (from its #! line) is not an executable file"
    problem = program_problem(interpreter, nesting + 1)
    return None if problem is None else f"its interpreter {interpreter!r} (from its #! line): {problem}"


def _elf_problem(head: bytes, size: int) -> str | None:
    layout, order = _ELF_LAYOUT.get(head[4] if len(head) > 4 else 0), _ELF_ORDER.get(head[5] if len(head) > 5 else 0)
    if layout is None or order is None:
        return "is not an ELF binary this system can read (unknown class or byte order)"
    header, phoff_at, phoff_format, counts_at = layout
    if size < header or len(head) < header:
        return f"is a truncated ELF binary ({size} bytes; its header alone needs {header})"
    (phoff,) = struct.unpack_from(order + phoff_format, head, phoff_at)
    entry_size, entries = struct.unpack_from(order + "HH", head, counts_at)
    needed = phoff + entry_size * entries
    if size < needed:
        return f"is a truncated ELF binary ({size} bytes; its program headers end at byte {needed})"
    return None
