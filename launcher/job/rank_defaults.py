"""What a launch sets in every rank's environment by default, the user's own values winning, and shows in `--dry-run`.

For compiling (docs/CONTRACT.md section 7): the compile-once
mode every rank gets (`--compile-cache`, else ACCEL_COMPILE_CACHE, else `job`) and the secret that signs the job's
copies, the job's TORCH_COMPILE_JOB_ID, and the plan's row that says it. The compile variables the user sets are
checked first, as torch and the ranks read them (`check_compile_variables`): one bad value is one line before
anything starts, never a traceback in every rank, nor an internal error where the launcher imports torch to list
the compile backends.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.contract.names import COMPILE_CACHE_MODES, COMPILE_CACHE_VAR, COMPILE_KEY_FILE_VAR, COMPILE_SECRET_VAR
from launcher.errors import UsageError
from launcher.job.validate import check_folder
from launcher.node.node_env import COMPILE_THREADS_VAR

__all__ = ["compile_environment", "check_compile_variables", "compile_cache_text", "USER_REMOTE_CACHE_VARS",
           "MIN_SECRET_LENGTH", "INDUCTOR_CACHE_VAR"]

# Where these are set, the user's own remote cache (Redis) serves inductor: ours stays off.
USER_REMOTE_CACHE_VARS = ("TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE", "TORCHINDUCTOR_REDIS_URL", "TORCHINDUCTOR_REDIS_HOST")
MIN_SECRET_LENGTH = 16
JOB_ID_VAR = "TORCH_COMPILE_JOB_ID"
# inductor's cache folder: torch makes it (os.makedirs) as torch._dynamo is first imported, in the ranks and in a
# launcher that lists the compile backends.
INDUCTOR_CACHE_VAR = "TORCHINDUCTOR_CACHE_DIR"


def compile_environment(flag: str | None, environ: Mapping[str, str], job: JobConfig, cwd: Path) -> dict[str, str]:
    """The variables every rank of `job` gets for compiling, beyond what `environ` (the user's) already sets."""
    check_compile_variables(environ)
    mode = _mode(flag, environ)
    env = {COMPILE_CACHE_VAR: "off" if _user_remote_cache(environ) else mode}
    given = environ.get(COMPILE_SECRET_VAR)
    if env[COMPILE_CACHE_VAR] == "job" and given is None:
        env[COMPILE_SECRET_VAR] = secrets.token_hex(32)
    if JOB_ID_VAR not in environ:
        env[JOB_ID_VAR] = _job_id(job, cwd)
    return env


def check_compile_variables(environ: Mapping[str, str], file_values: Mapping[str, str] | None = None,
                            env_file: object = "the env file") -> None:
    """UsageError for the first compile variable the ranks would get from `environ` over `file_values` (read from
    `env_file`, which the line then names) that cannot work, whatever --compile-cache says (every rank reads them):
    a secret that is short or not UTF-8 text (an environment's bytes no encoding can read; never shown), a
    TORCHINDUCTOR_COMPILE_THREADS torch's int() refuses, a TORCHINDUCTOR_CACHE_DIR that cannot be a folder."""
    file_values = file_values or {}
    seen = {**file_values, **environ}

    def named(name: str) -> str:
        return f"{name} in {env_file}" if name in file_values and name not in environ else name

    secret = seen.get(COMPILE_SECRET_VAR)
    if secret is not None and not _is_text(secret):
        raise UsageError(named(COMPILE_SECRET_VAR), "<hidden>", "not UTF-8 text: the ranks sign with its UTF-8 "
                         f"bytes; give at least {MIN_SECRET_LENGTH} characters of text, the same on every node")
    if secret is not None and len(secret) < MIN_SECRET_LENGTH:
        raise UsageError(named(COMPILE_SECRET_VAR), "<hidden>", f"give at least {MIN_SECRET_LENGTH} characters, the "
                         "same on every node")
    threads = seen.get(COMPILE_THREADS_VAR)
    if threads is not None:
        try:
            int(threads)  # as torch reads it, so that nothing torch takes is refused
        except ValueError:
            raise UsageError(named(COMPILE_THREADS_VAR), threads, "torch reads it as a whole number of compile "
                             "workers (e.g. 4; 1 compiles in the rank itself); set one, or unset it") from None
    cache = seen.get(INDUCTOR_CACHE_VAR)
    if cache:
        check_folder(cache, named(INDUCTOR_CACHE_VAR))


def _is_text(value: str) -> bool:
    """Whether `value` is text: os.environ holds bytes no encoding can read as lone surrogates."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def compile_cache_text(rank_env: Mapping[str, str], environ: Mapping[str, str], env_file_read: bool) -> str:
    """The plan's `compile cache` row (`environ`: the launcher's; the env file's values are in `rank_env`)."""
    mode = rank_env.get(COMPILE_CACHE_VAR, "off")
    seen = {**rank_env, **environ}
    user = _user_remote_cache(seen)
    if user is not None:
        return f"off: your own remote cache ({user}={seen[user]}) serves inductor"
    if mode == "off":
        return "off: every rank compiles every graph (torch's own behaviour)"
    if mode == "node":
        return "node: each graph compiled by one rank of each node, loaded by the node's others"
    if COMPILE_SECRET_VAR in environ:
        shared = f"from {COMPILE_SECRET_VAR}"
    elif COMPILE_KEY_FILE_VAR in rank_env:
        shared = f"from your key {rank_env[COMPILE_KEY_FILE_VAR]}, one per user: the nodes of one home share it"
    else:  # a generated secret and one from the env file both reach the ranks as the job's
        shared = f"from the env file's {COMPILE_SECRET_VAR}, else made for this launch" if env_file_read else \
            "made for this launch"
    return (f"job: each graph compiled by one rank of the job, loaded by every other (copies signed with a secret "
            f"{shared}; nodes started one by one share only with the same secret)")


def _mode(flag: str | None, environ: Mapping[str, str]) -> str:
    if flag is not None:
        return flag
    value = environ.get(COMPILE_CACHE_VAR)
    if value is None or not value.strip():
        return "job"
    if value not in COMPILE_CACHE_MODES:
        raise UsageError(COMPILE_CACHE_VAR, value, f"expected one of {', '.join(COMPILE_CACHE_MODES)}")
    return value


def _user_remote_cache(environ: Mapping[str, str]) -> str | None:
    return next((name for name in USER_REMOTE_CACHE_VARS if environ.get(name, "").strip()), None)


def _job_id(job: JobConfig, cwd: Path) -> str:
    """The same for every rank and node of a job, across its restarts and a relaunch of the same command: what
    names the job, hashed."""
    program = job.program
    named = [str(cwd), program.mode, program.target, list(program.args), job.nnodes, job.nproc_per_node,
             job.backend.name, job.rdzv_id]
    return "accel-" + hashlib.sha256(json.dumps(named).encode()).hexdigest()[:16]
