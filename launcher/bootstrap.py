"""The first code in every rank (CONTRACT.md section 3).

Run as `python -m launcher.bootstrap {script,module,exec} TARGET [ARGS...]`. Before any user code it
ties the rank's life to the launcher's, validates the resolved compile backend through
`set_compile_backend`, makes it torch's default, and only then runs the user's program.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import runpy
import signal
import socket
import sys
import time
from typing import NoReturn

from launcher.failure import REFUSAL_PHRASE, VALIDATION_STATUS
from launcher.rank_env import LAUNCHER_PID_VAR, SOURCE_VAR

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def main(argv: list[str] | None = None) -> None:
    """Validate, then run the program; exits 2 with one line on stderr when the backend is refused."""
    mode, target, *args = sys.argv[1:] if argv is None else argv
    _die_with_launcher()
    try:
        _install_backend()
        # torch and dynamo are imported now and live as long as the rank: take their millions of objects out
        # of the collector's sight, so neither the user's collections nor the exit walk them (an exit took
        # 1.7 s instead of 0.25 s here, and a failed rank's exit delays the whole job's teardown).
        gc.freeze()
        _run(mode, target, args)
    except KeyboardInterrupt:
        # The launcher forwards Ctrl-C to every rank: end as SIGINT would, without a traceback per rank.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return None


def _run(mode: str, target: str, args: list[str]) -> None:
    if mode == "exec":
        os.execvp(target, [target, *args])
    if mode == "module":
        sys.argv = [target, *args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return
    script = os.path.abspath(target)
    sys.argv = [target, *args]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")


def _die_with_launcher() -> None:
    """Ask Linux for SIGTERM when the launcher dies; on that signal take the rank's own process group along."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    signal.signal(signal.SIGTERM, _terminate_process_group)
    launcher_pid = os.environ.get(LAUNCHER_PID_VAR)
    if launcher_pid and os.getppid() != int(launcher_pid):
        # The launcher died before prctl took effect: no signal will come, so leave now.
        _terminate_process_group(signal.SIGTERM, None)


def _terminate_process_group(signum: int, _frame: object) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.killpg(os.getpgrp(), signum)


def _install_backend() -> None:
    from accelerators import UnsupportedBackendError, get_accelerator

    backend = os.environ.get("ACCEL_COMPILE_BACKEND", "")
    try:
        accelerator = get_accelerator()
        accelerator.set_compile_backend(backend)
    except UnsupportedBackendError as exc:
        _fail_validation(str(exc.with_source(os.environ.get(SOURCE_VAR, "ACCEL_COMPILE_BACKEND"))))
    except ValueError as exc:
        _fail_validation(str(exc))
    import torch.compiler

    if hasattr(torch.compiler, "set_default_backend"):
        torch.compiler.set_default_backend(accelerator.resolved_compile_backend())


def _fail_validation(message: str) -> NoReturn:
    """Hand the one-line reason to the launcher through the engine's error file, which prints it once."""
    rank = os.environ.get("RANK", "?")
    line = f"rank {rank} on {socket.gethostname()} {REFUSAL_PHRASE}: {message}"
    error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if error_file:
        with open(error_file, "w", encoding="utf-8") as handle:
            json.dump({"message": line, "timestamp": int(time.time())}, handle)
    else:
        print(f"accel-launch: {line}", file=sys.stderr, flush=True)
    sys.exit(VALIDATION_STATUS)


if __name__ == "__main__":
    main()
