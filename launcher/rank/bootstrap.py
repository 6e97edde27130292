"""The first code in every rank (docs/CONTRACT.md section 3).

Run as `python -P -m launcher.rank.bootstrap {script,module,exec} TARGET [ARGS...]` (`-P`: the working
directory is not searched first, so a user's own `launcher` or `accelerators` cannot stand in for ours).
Before any user code it ties the rank's life to the launcher's, puts the program's folder first on sys.path
(so an import-path backend beside the script is found as the script would import it), validates the resolved
compile backend through `set_compile_backend` (launcher.rank.compile_hook), arranges for torch (and
DeepSpeed, transformers, where installed) to use it when the user's code imports them, and then runs the user's
program as `python script.py` or `python -m module` would: the same sys.path, and a traceback that starts at
the program's own first frame.
"""

from __future__ import annotations

import builtins
import gc
import importlib.machinery
import os
import runpy
import signal
import stat
import sys
from types import ModuleType, TracebackType

from launcher.contract.names import FAILURE_STATUS, START_REFUSAL_PHRASE
from launcher.rank.after_import import after_import
from launcher.rank.bind_cores import apply_cpu_binding
from launcher.rank.compile_cache.install import share_compiles
from launcher.rank.compile_hook import install_backend
from launcher.rank.compile_state import note_compiles
from launcher.rank.gloo_exit import settle_gloo_at_exit
from launcher.rank.launcher_link import answer_stack_requests, die_with_launcher
from launcher.rank.library_bridges import bridge_deepspeed, bridge_transformers
from launcher.rank.node_agreement import agree_at_first_init
from launcher.rank.progress import note_progress
from launcher.rank.refusal import refuse
from launcher.rank.status_publisher import publish_status_at_first_init
from launcher.rank.store_host import host_store_when_imported

__all__ = ["main"]

_OUR_PACKAGES = ("launcher", "accelerators")


def main(argv: list[str] | None = None) -> None:
    """Validate, then run the program; exits 2 with one line when the backend is refused, or when the rank
    cannot start (a CPU binding it cannot apply, a --no-python program exec cannot run)."""
    mode, target, *args = sys.argv[1:] if argv is None else argv
    try:
        # Within the try from the first step: once the parent-death handler is set the launcher passes Ctrl-C on
        # as SIGINT (before, as SIGTERM), which must end the rank below, silently.
        die_with_launcher()
        settle_gloo_at_exit()
        host_store_when_imported()
        agree_at_first_init()
        try:
            apply_cpu_binding()
        except ValueError as exc:  # the launcher checked it; a value changed since, or another node's cores
            refuse(str(exc), START_REFUSAL_PHRASE)
        folder = _program_folder(mode, target)
        if folder is not None:  # none for --no-python: its exec ends every handler, and the program is its own
            sys.path.insert(0, folder)
            answer_stack_requests()
            note_compiles()
            note_progress()
            publish_status_at_first_init()  # before share_compiles takes the job's secret out of the environment
        accelerator = install_backend()
        bridge_deepspeed(accelerator)
        bridge_transformers(accelerator)
        share_compiles()
        # torch and dynamo live as long as the rank: once imported, take their millions of objects out of the
        # collector's sight, so neither the user's collections nor the exit walk them (an exit took 1.7 s
        # instead of 0.25 s here, and a failed rank's exit delays the whole job's teardown).
        after_import("torch", _freeze)
        after_import("torch._dynamo", _freeze)
        if folder is not None:
            _forget_shadowed_packages(folder)
        _run(mode, target, args)
    except KeyboardInterrupt:
        # The launcher forwards Ctrl-C to every rank: end as SIGINT would, without a traceback per rank.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return None


def _freeze(_module: ModuleType) -> None:
    gc.freeze()


def _program_folder(mode: str, target: str) -> str | None:
    """sys.path[0] as python gives it: the script's folder, the working directory for `-m`; none for exec. The
    launcher's check looks there first by the same rule (`Program.import_folder`), written again here since
    importing the job's contract would add about 20 ms to every rank's start."""
    if mode == "exec":
        return None
    return os.getcwd() if mode == "module" else os.path.dirname(os.path.abspath(target))


def _run(mode: str, target: str, args: list[str]) -> None:
    if mode == "exec":
        # Python ignores SIGPIPE and SIGXFSZ, and exec keeps them ignored: the program gets their default actions
        # back, as torchrun's ranks get them from subprocess (a write past ulimit -f ends it with SIGXFSZ).
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)
        try:
            os.execvp(target, [target, *args])
        except OSError as exc:
            refuse(f"cannot run {target!r} (--no-python): {exc.strerror or exc}", START_REFUSAL_PHRASE)
    source = _script_source(target) if mode == "script" else b""
    sys.argv = [target, *args]
    try:
        if mode == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            _run_script(target, source)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        # As python reports an uncaught exception: the traceback from the program's first frame, status 1.
        frames = _program_frames(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(frames), frames)
        sys.exit(FAILURE_STATUS)


def _run_script(target: str, source: bytes) -> None:
    """Run the script as `python script.py` does: as `__main__` for good, `__file__` absolute, sys.argv[0] as
    typed (runpy.run_path makes both the path it is given)."""
    path = os.path.abspath(target)
    code = compile(source, path, "exec", dont_inherit=True)  # not this module's __future__ imports
    main = ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _script_source(target: str) -> bytes:
    """The script's bytes, read without blocking from what was opened (the launcher checked the path; one swapped
    for a FIFO since would block the rank's read for good): refused in one line when it is no regular file."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        refuse(f"script {target!r}: {exc.strerror or exc}", START_REFUSAL_PHRASE)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            refuse(f"script {target!r} is no longer a regular file (it changed since the launcher's check)",
                   START_REFUSAL_PHRASE)
        return handle.read()


def _program_frames(traceback: TracebackType | None) -> TracebackType | None:
    """The traceback without its first frames of ours and of runpy (those before the program's first)."""
    ours = {_run.__code__.co_filename, runpy.run_module.__code__.co_filename}
    while traceback is not None and traceback.tb_next is not None and traceback.tb_frame.f_code.co_filename in ours:
        traceback = traceback.tb_next
    return traceback


def _forget_shadowed_packages(folder: str) -> None:
    """Where the user's folder holds a module named like one of ours, forget ours, so the user's own imports get
    theirs (ours keep working in the hooks)."""
    for name in _OUR_PACKAGES:
        spec = importlib.machinery.PathFinder.find_spec(name, [folder])
        ours = sys.modules.get(name)
        if spec is None or ours is None or spec.origin == getattr(ours, "__file__", None):
            continue
        for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
            del sys.modules[loaded]


if __name__ == "__main__":
    main()
