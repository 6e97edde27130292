"""What compile once keeps beyond one launch (docs/CONTRACT.md section 7), decided where the job is prepared: the
per-user key that signs the job's copies where nodes are started one by one, the compile folder that outlives the
job (`--compile-cache-dir`), and the compile workers the plan shows.

The key is made once, in the user's config folder (`$XDG_CONFIG_HOME/accel-launch/compile-key`, mode 0600, as an
ssh key), so every node that shares the user's home signs with it and no setup is needed; a key file another user
could read or write is not used (one note; the job then shares within each node only). The folder is trusted as
torch trusts its cache folder and ssh `~/.ssh`: a folder of this user's that no one else can write, else one note
says why and the job runs without it. Neither is made or written in a dry run's check of the folder.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.contract.names import COMPILE_CACHE_VAR, COMPILE_DIR_VAR, COMPILE_KEY_FILE_VAR, COMPILE_SECRET_VAR
from launcher.node.node_env import COMPILE_THREADS_VAR
from launcher.shared_files import UnsafeFileError, ownership_problem, read_user_bytes

__all__ = ["keep_environment", "key_path", "user_key", "folder_problem", "compile_threads_text", "folder_text"]

_KEY_BYTES = 32


def keep_environment(mode: str, folder_flag: str | None, environ: Mapping[str, str], job: JobConfig,
                     own_node: bool) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the ranks get beyond compile_environment's (`mode` resolved, `environ` the user's with the env file's),
    and the notes to say: the user's key on a node of a job started one by one (`own_node`: not a hostfile's head),
    and the compile folder where it is given and usable."""
    env: dict[str, str] = {}
    notes: list[str] = []
    if mode == "job" and own_node and job.nnodes != "1" and COMPILE_SECRET_VAR not in environ:
        path = key_path()
        key, problem = user_key(str(path))
        if key is not None:
            env.update({COMPILE_SECRET_VAR: key, COMPILE_KEY_FILE_VAR: str(path)})
        else:
            notes.append(f"the compile key {path} {problem}: nodes started one by one share compiles within each "
                         f"node only; remove it (a new one is made) or set {COMPILE_SECRET_VAR} on every node")
    given = folder_flag if folder_flag is not None else environ.get(COMPILE_DIR_VAR, "").strip() or None
    if given is not None:
        folder = os.path.abspath(os.path.expanduser(given))
        problem = folder_problem(folder) if mode != "off" else None
        env[COMPILE_DIR_VAR] = folder if mode != "off" and problem is None else ""
        if problem is not None:
            source = "--compile-cache-dir" if folder_flag is not None else COMPILE_DIR_VAR
            notes.append(f"the compile folder {folder} ({source}) {problem}: it is not used")
    return env, tuple(notes)


def key_path() -> Path:
    """The user's compile key: in $XDG_CONFIG_HOME, else ~/.config, as the launcher's own environment says (never an
    env file's)."""
    config = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "accel-launch" / "compile-key"


def user_key(path: str) -> tuple[str | None, str]:
    """(the key at `path`, made first if missing, ""), or (None, why it cannot be used)."""
    if not os.path.lexists(path):
        try:
            _make_key(Path(path))
        except OSError as exc:
            return None, f"cannot be made ({exc.strerror or exc})"
    try:
        return _read_key(path), ""
    except UnsafeFileError as exc:
        return None, str(exc)


def _read_key(path: str) -> str:
    data = read_user_bytes(path, 4096, own_only=True)
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    if mode & 0o077:
        raise UnsafeFileError(f"can be read by group or others (mode {mode:04o}; make it 0600)")
    text = data.decode("ascii", "replace").strip()
    if len(text) < 2 * _KEY_BYTES or not text.isalnum():
        raise UnsafeFileError("is not a key of accel-launch's")
    return text


def _make_key(path: Path) -> None:
    """A new key at `path`, whole, never over another node's (made at once in the same shared home): link(2) of a
    complete private file fails where one is there already, and that one is used."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".compile-key.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(_KEY_BYTES) + "\n")
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(temp)


def folder_problem(folder: str) -> str | None:
    """Why the compile folder cannot be trusted, or None (a missing one is made by the first rank that writes)."""
    real = os.path.realpath(folder)
    try:
        info = os.lstat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return ownership_problem(info, folder=True)


def folder_text(rank_env: Mapping[str, str]) -> str:
    """The plan's `compile folder` row."""
    folder = rank_env.get(COMPILE_DIR_VAR)
    if not folder:
        return "(none: compiled graphs live in each node's own cache, TORCHINDUCTOR_CACHE_DIR)"
    made = "" if os.path.isdir(folder) else " (made by the first rank that writes)"
    return (f"{folder}{made}: each graph with its kernels, its AOTAutograd entry, the CPU probes and torch's "
            "profile-guided state, written once by the rank that compiled it and loaded by every later job")


def compile_threads_text(rank_env: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """What the compile cache row adds about inductor's compile workers (nothing where the user set them)."""
    threads = rank_env.get(COMPILE_THREADS_VAR)
    if threads is None or COMPILE_THREADS_VAR in environ:
        return ""
    if rank_env.get(COMPILE_CACHE_VAR) == "off":
        return f"; {COMPILE_THREADS_VAR}={threads}, each rank's share of the CPUs, as every rank compiles"
    return (f"; {COMPILE_THREADS_VAR}={threads}, the node's CPUs: the rank that compiles a graph has the cores the "
            "ranks waiting for it leave idle")
