"""The options every node's engine uses as given (`RunSettings`), each declared once on its field
(launcher.contract.flag_field) and checked whenever RunSettings is made: on the head, and again on a node that
rebuilds its job from JSON. The JobConfig (launcher.contract.job_config) carries it whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from launcher.contract.engine_options import EngineOptions, check_rdzv_backend
from launcher.contract.flag_field import Number, both, check_flags, flag
from launcher.contract.names import COMPILE_CACHE_MODES
from launcher.contract.user_values import check_given, check_host, check_seconds
from launcher.errors import UsageError

__all__ = ["RunSettings", "DEFAULT_GRACE_SECONDS", "MAX_GRACE_SECONDS", "MAX_RESTARTS"]

DEFAULT_GRACE_SECONDS = 30  # torchrun's shutdown window when neither a flag nor TORCH_ELASTIC_SHUTDOWN_TIMEOUT sets it
MAX_GRACE_SECONDS = 3600
MAX_RESTARTS = 1000


def _port(option: str, port: int) -> None:
    if not 0 < port < 65536:
        raise UsageError(option, port, "must be between 1 and 65535")


def _restarts(option: str, restarts: int) -> None:
    if restarts < 0:
        raise UsageError(option, restarts, "must be 0 or more")
    if restarts > MAX_RESTARTS:
        raise UsageError(option, restarts, f"at most {MAX_RESTARTS}")


@dataclass(frozen=True)
class RunSettings:
    """The options every node's engine uses as given, each declared on its field (launcher.contract.flag_field)."""

    master_addr: str = flag(*both("master-addr"), default="127.0.0.1", show_default=True, check=check_host,
                            help="Address of the node that hosts the store; a job torchrun runs standalone (one "
                            "node without --master-port or --rdzv-endpoint) gives its ranks this host's name "
                            "instead, as torchrun does.")
    master_port: int | None = flag(*both("master-port"), default=None, number=Number(), check=_port,
                                   help="Port of the store; default: a free port.")
    rdzv_backend: str = flag(*both("rdzv-backend"), default="c10d", show_default=True, metavar="NAME",
                             check=check_rdzv_backend, help="torch elastic rendezvous backend: c10d, static, or a "
                             "handler of torch's torchrun.handlers.")
    rdzv_timeout: int = flag(*both("rdzv-timeout"), default=900, number=Number(minimum=1), show_default=True,
                             check=partial(check_seconds, above_zero=True), help="Seconds to wait for the other nodes.")
    max_restarts: int = flag(*both("max-restarts"), default=0, number=Number(minimum=0), show_default=True,
                             check=_restarts, help="Restarts of the worker group after a failure.")
    grace_period: float = flag(*both("grace-period"), default=float(DEFAULT_GRACE_SECONDS), metavar="SECONDS",
                               number=Number(whole=False, minimum=0),
                               check=partial(check_seconds, limit=MAX_GRACE_SECONDS),
                               help="Seconds ranks get after SIGTERM before SIGKILL (torchrun's --shutdown-timeout). "
                               "Default: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30.")
    timeout: float | None = flag("--timeout", default=None, metavar="SECONDS",
                                 number=Number(whole=False, minimum=0, min_open=True),
                                 check=partial(check_seconds, above_zero=True),
                                 help="Stop the whole job after this many seconds (exit 124).")
    on_hang: str = flag(*both("on-hang"), default="report", choices=("report", "stop"), show_default=True,
                        help="What a hang found without --timeout does (no rank finished a step for 10 times the "
                        "usual step, 30 to 60 s): report the ranks' stacks, or stop the job as --timeout does.")
    log_dir: str | None = flag(*both("log-dir"), default=None, metavar="DIR", check=check_given,
                               help="Keep every rank's stdout and stderr under DIR.")
    compile_cache: str | None = flag(*both("compile-cache"), default=None, choices=COMPILE_CACHE_MODES,
                                     help="Compile each graph once: in one rank of the job (job), of each node "
                                     "(node), or in every rank, as torch does (off). Default: ACCEL_COMPILE_CACHE, "
                                     "else job.")
    compile_cache_dir: str | None = flag(*both("compile-cache-dir"), default=None, metavar="DIR", check=check_given,
                                         help="Keep every compiled graph in DIR for later jobs, on any node (a "
                                         "folder of yours no one else can write). Default: ACCEL_COMPILE_CACHE_DIR.")
    bind_cores: str | None = None  # --bind_core_list / --bind_cores_to_rank ("": all cores); each node splits its own
    verbose: bool = False
    quiet: bool = False  # DeepSpeed's -q / --log_level error: no launch line, only errors
    engine: EngineOptions = field(default_factory=EngineOptions)

    def __post_init__(self) -> None:
        check_flags(self)
