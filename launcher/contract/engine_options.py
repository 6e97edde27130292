"""torchrun's options that go to torch elastic unchanged: role, rendezvous extras, log streams, signals.

Parsed and checked here, without importing torch, so that a bad value is a usage error before any rank
starts (on the head and again on every node, which rebuilds them from the job it gets); `spawn` hands
them to the engine's LaunchConfig and DefaultLogsSpecs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from launcher.contract.rdzv_conf import check_rdzv_conf
from launcher.contract.seconds import check_seconds
from launcher.contract.text import check_host, check_printable
from launcher.errors import UsageError
from launcher.limits import RANKS_PER_NODE, whole_number

__all__ = ["EngineOptions", "parse_std", "parse_ranks_filter", "EVENT_LOG_HANDLERS", "MAX_MONITOR_SECONDS",
           "DEFAULT_LOGS_SPECS", "entry_point_names", "LOGS_SPECS_GROUP", "HANDLERS_GROUP"]

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


@dataclass(frozen=True)
class EngineOptions:
    """The torchrun flags passed through to torch elastic, with torchrun's defaults."""

    role: str = "default"
    rdzv_conf: dict[str, str] = field(default_factory=dict)
    standalone: bool = False
    local_addr: str | None = None
    monitor_interval: float = 0.1
    redirects: str = "0"
    tee: str = "0"
    local_ranks_filter: tuple[int, ...] = ()
    event_log_handler: str = "null"
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    duplicate_stdout_filters: tuple[str, ...] = ()
    duplicate_stderr_filters: tuple[str, ...] = ()
    virtual_local_rank: bool = False
    logs_specs: str = DEFAULT_LOGS_SPECS

    def __post_init__(self) -> None:
        if not self.role.strip():
            raise UsageError("--role", self.role, "give a role name, e.g. trainer")
        check_printable("--role", self.role)
        check_rdzv_conf(self.rdzv_conf)
        if self.local_addr is not None:
            check_host("--local-addr", self.local_addr)
        check_seconds("--monitor-interval", self.monitor_interval, MAX_MONITOR_SECONDS, above_zero=True)
        if self.event_log_handler not in EVENT_LOG_HANDLERS:
            raise UsageError("--event-log-handler", self.event_log_handler,
                             f"expected one of torch elastic's handlers: {', '.join(EVENT_LOG_HANDLERS)}")
        parse_std("--redirects", self.redirects)
        parse_std("--tee", self.tee)
        known_specs = entry_point_names(LOGS_SPECS_GROUP)
        if self.logs_specs != DEFAULT_LOGS_SPECS and self.logs_specs not in known_specs:
            raise UsageError("--logs-specs", self.logs_specs, f"expected the name of one of torch's {LOGS_SPECS_GROUP} "
                             f"entry points: {', '.join(sorted({DEFAULT_LOGS_SPECS, *known_specs}))}")
        unknown = [name for name in self.signals_to_handle.split(",") if name.strip() not in _KNOWN_SIGNALS]
        if unknown:
            raise UsageError("--signals-to-handle", self.signals_to_handle,
                             f"expected names from {', '.join(_KNOWN_SIGNALS)}, joined by ','")


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
