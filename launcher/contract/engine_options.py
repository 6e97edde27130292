"""torchrun's options that go to torch elastic unchanged: role, rendezvous extras, log streams, signals.

Parsed and checked here, without importing torch, so that a bad value is a usage error before any rank
starts (on the head and again on every node, which rebuilds them from the job it gets); the engine path
hands them to torch's WorkerSpec, rendezvous parameters and DefaultLogsSpecs (launcher/run/engine/agent_launch.py,
engine/engine_run.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from difflib import get_close_matches
from importlib.util import find_spec
from importlib.metadata import entry_points

from launcher.contract.flag_field import Number, both, check_flags, flag
from launcher.contract.rdzv_conf import check_rdzv_conf, parse_rdzv_conf
from launcher.contract.user_values import check_host, check_printable, check_seconds
from launcher.errors import RefusedFlagError, UsageError
from launcher.limits import RANKS_PER_NODE, whole_number

__all__ = ["EngineOptions", "parse_std", "parse_ranks_filter", "EVENT_LOG_HANDLERS", "MAX_MONITOR_SECONDS",
           "DEFAULT_LOGS_SPECS", "entry_point_names", "LOGS_SPECS_GROUP", "HANDLERS_GROUP", "ETCD_BACKENDS",
           "check_rdzv_backend"]

# torch's Std.from_str: one digit 0-3 for every rank, or `local_rank:digit,...` per rank.
_STD_VALUE = re.compile(r"[0-3]")
_STD_MAP = re.compile(r"[0-9]+:[0-3](,[0-9]+:[0-3])*")
_KNOWN_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
# torch.distributed.elastic.events.handlers' registry, which nothing of ours adds to (a test compares them).
EVENT_LOG_HANDLERS = ("null", "console", "dynamic_rendezvous")
MAX_MONITOR_SECONDS = 3600
# torch's own entry in `torchrun.logs_specs` (DefaultLogsSpecs): the log layout every launch has without the flag.
DEFAULT_LOGS_SPECS = "default"
# The entry-point groups torchrun loads its plugins from: log layouts and rendezvous handlers.
LOGS_SPECS_GROUP = "torchrun.logs_specs"
HANDLERS_GROUP = "torchrun.handlers"
# torchrun's etcd rendezvous backends, which need an etcd server and its client package.
ETCD_BACKENDS = ("etcd", "etcd-v2")


def _role(option: str, role: str) -> None:
    if not role.strip():
        raise UsageError(option, role, "give a role name, e.g. trainer")
    check_printable(option, role)


def _event_log_handler(option: str, name: str) -> None:
    if name not in EVENT_LOG_HANDLERS:
        raise UsageError(option, name, f"expected one of torch elastic's handlers: {', '.join(EVENT_LOG_HANDLERS)}")


def _logs_specs(option: str, name: str) -> None:
    known = entry_point_names(LOGS_SPECS_GROUP)
    if name != DEFAULT_LOGS_SPECS and name not in known:
        raise UsageError(option, name, f"expected the name of one of torch's {LOGS_SPECS_GROUP} entry points: "
                         f"{', '.join(sorted({DEFAULT_LOGS_SPECS, *known}))}")


def _signals(option: str, text: str) -> None:
    unknown = [name for name in text.split(",") if name.strip() not in _KNOWN_SIGNALS]
    if unknown:
        raise UsageError(option, text, f"expected names from {', '.join(_KNOWN_SIGNALS)}, joined by ','")


def check_rdzv_backend(option: str, name: str) -> None:
    """A handler of torch's rendezvous registry: its own four (etcd only with its client package installed) and
    those of torch's `torchrun.handlers` entry points."""
    if name in ETCD_BACKENDS and find_spec("etcd") is None:
        raise RefusedFlagError(f"{option} {name}", "it needs an etcd server and the python-etcd package, "
                               "which is not installed; use c10d (the default): --rdzv-endpoint HOST:PORT on "
                               "every node")
    if name in ("c10d", "static"):
        return
    known = ("c10d", "static", *ETCD_BACKENDS, *entry_point_names(HANDLERS_GROUP))
    if name not in known:
        close = get_close_matches(name, known, n=1)
        raise UsageError(option, name, f"expected one of torch's rendezvous handlers: {', '.join(known)}"
                         + (f"; did you mean {close[0]!r}?" if close else ""))


def _listed(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def parse_std(flag: str, text: str) -> int | dict[int, int]:
    """`--redirects` / `--tee`: 0 none, 1 stdout, 2 stderr, 3 both; for every rank or as `rank:value,...`."""
    if _STD_VALUE.fullmatch(text):
        return int(text)
    if _STD_MAP.fullmatch(text):
        return {whole_number(rank, flag, RANKS_PER_NODE, index=True): int(value)
                for rank, value in (item.split(":") for item in text.split(","))}
    raise UsageError(flag, text, "expected 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or per rank, e.g. 0:3,1:0")


def parse_ranks_filter(text: str) -> tuple[int, ...]:
    """`--local-ranks-filter 0,2`: the local ranks whose teed output is shown."""
    return tuple(sorted({whole_number(part, "--local-ranks-filter", RANKS_PER_NODE, index=True)
                         for part in text.split(",")}))


@functools.cache
def entry_point_names(group: str) -> tuple[str, ...]:
    """The sorted names of `group`'s entry points in the installed packages' metadata (none: an empty tuple),
    read without importing any of them."""
    return tuple(sorted({point.name for point in entry_points(group=group)}))


@dataclass(frozen=True)
class EngineOptions:
    """The torchrun flags passed through to torch elastic, each declared on its field with torchrun's default."""

    role: str = flag("--role", default="default", show_default=True, help="The workers' role (ROLE_NAME).",
                     check=_role)
    rdzv_conf: dict[str, str] = flag(*both("rdzv-conf"), default_factory=dict, metavar="K=V,...",
                                     help="Extra rendezvous settings, e.g. join_timeout=600.",
                                     parse=parse_rdzv_conf, check=lambda _, conf: check_rdzv_conf(conf))
    standalone: bool = flag("--standalone", default=False,
                            help="One node: rendezvous on a free port with a fresh run id.")
    local_addr: str | None = flag(*both("local-addr"), default=None, metavar="ADDR",
                                  help="This node's address for the rendezvous.", check=check_host)
    monitor_interval: float = flag(*both("monitor-interval"), default=0.1, number=Number(whole=False),
                                   show_default=True, help="Seconds between the engine's checks of the ranks.",
                                   check=functools.partial(check_seconds, limit=MAX_MONITOR_SECONDS, above_zero=True))
    redirects: str = flag("-r", "--redirects", default="0", show_default=True, metavar="0-3|RANK:0-3,...",
                          help="Streams of ranks that go to log files only (1 out, 2 err, 3 both).", check=parse_std)
    tee: str = flag("-t", "--tee", default="0", show_default=True, metavar="0-3|RANK:0-3,...",
                    help="Streams of ranks that go to log files and the terminal.", check=parse_std)
    local_ranks_filter: tuple[int, ...] = flag(*both("local-ranks-filter"), default=(), metavar="R,R",
                                               help="Only these local ranks' teed output on the terminal.",
                                               parse=lambda text: parse_ranks_filter(text) if text else ())
    event_log_handler: str = flag(*both("event-log-handler"), default="null", show_default=True,
                                  help="torch elastic event handler (null, console, ...).", check=_event_log_handler)
    signals_to_handle: str = flag(*both("signals-to-handle"), default="SIGTERM,SIGINT,SIGHUP,SIGQUIT",
                                  show_default=True, check=_signals,
                                  help="Stop signals that reach the ranks as they are (others as SIGTERM).")
    duplicate_stdout_filters: tuple[str, ...] = flag(*both("duplicate-stdout-filters"), default=(), metavar="S,S",
                                                     help="Copy stdout lines containing any of these to a file.",
                                                     parse=_listed)
    duplicate_stderr_filters: tuple[str, ...] = flag(*both("duplicate-stderr-filters"), default=(), metavar="S,S",
                                                     help="Copy stderr lines containing any of these to a file.",
                                                     parse=_listed)
    virtual_local_rank: bool = flag(*both("virtual-local-rank"), default=False,
                                    help="Every rank sees LOCAL_RANK=0 and one device.")
    logs_specs: str = flag(*both("logs-specs"), default=DEFAULT_LOGS_SPECS, show_default=True, metavar="NAME",
                           help="A log layout of torch's torchrun.logs_specs entry points; other than default, the "
                           "launch runs on torch elastic's agent.", check=_logs_specs)

    def __post_init__(self) -> None:
        check_flags(self)
