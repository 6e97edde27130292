"""The launcher's side of torch's private surface, in one table: every private torch name the engine path reaches,
with the feature it serves. The rank's side is launcher/rank/torch_seams.py; a torch upgrade is reviewed against
the two (docs/ARCHITECTURE.md, "Rules the code keeps").

Each name is looked up here, by the module that uses it: a function from its module, a method from torch's class,
and what torch's agent makes in its `__init__` from the agent itself. A torch that lacks one turns that one feature
off, said once, and the job runs as under torchrun (tests/run/engine/test_engine_seams.py takes each away in turn):

- torchrun's plugin loader: without it --logs-specs NAME is refused in one line (exit 2) that names torch; torch's own
  layout of the logs, the default, needs no loader;
- torch's local agent's extension points, and what its `__init__` makes that our methods use: without one, torch's
  own `LocalElasticAgent` starts and watches the ranks, as torchrun's does (launcher/run/engine/agent_launch.py);
  the job keeps torch's rendezvous, restarts and membership, and loses the rank group's own features (one note);
- the D-state check's bookkeeping: without it, ranks that torch's check stopped are not named in the outcome.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

from launcher.run.group.terminal_lines import terminal

__all__ = ["Seam", "SEAMS", "LOGS_SPECS", "RANK_GROUP", "STUCK_RANKS", "ABSENT", "found", "lacking", "missing",
           "torch_version"]

LOGS_SPECS = "--logs-specs plugins, loaded by torchrun's own loader (a plugin named is refused)"
RANK_GROUP = ("accel-launch's rank group on torch's agent (rank output lines, --timeout, --on-hang, the stacks, the "
              "watch, the first failure's account from its log; torch's LocalElasticAgent starts the ranks)")
STUCK_RANKS = "naming the ranks torch's D-state check stopped"

_AGENT = "torch.distributed.elastic.agent.server.local_elastic_agent"


@dataclass(frozen=True)
class Seam:
    """A private name: `attribute` (dotted) of `module`, and the feature a torch without it turns off. `made` is
    True for an attribute torch's `__init__` makes, which only an instance has."""

    module: str
    attribute: str
    feature: str
    made: bool = False


SEAMS: dict[str, Seam] = {
    "logs_specs_loader": Seam("torch.distributed.run", "_get_logs_specs_class", LOGS_SPECS),
    "start_workers": Seam(_AGENT, "LocalElasticAgent._start_workers", RANK_GROUP),
    "monitor_workers": Seam(_AGENT, "LocalElasticAgent._monitor_workers", RANK_GROUP),
    "restart_workers": Seam(_AGENT, "LocalElasticAgent._restart_workers", RANK_GROUP),
    "stop_workers": Seam(_AGENT, "LocalElasticAgent._stop_workers", RANK_GROUP),
    "shutdown": Seam(_AGENT, "LocalElasticAgent._shutdown", RANK_GROUP),
    "local_watchdog": Seam(_AGENT, "LocalElasticAgent._setup_local_watchdog", RANK_GROUP),
    "health_check": Seam(_AGENT, "LocalElasticAgent._setup_healthcheck", RANK_GROUP),
    "process_context": Seam(_AGENT, "LocalElasticAgent._pcontext", RANK_GROUP, made=True),
    "logs_layout": Seam(_AGENT, "LocalElasticAgent._logs_specs", RANK_GROUP, made=True),
    "remaining_restarts": Seam(_AGENT, "LocalElasticAgent._remaining_restarts", RANK_GROUP, made=True),
    "stuck_timeout": Seam(_AGENT, "LocalElasticAgent._uninterruptible_state_timeout", STUCK_RANKS, made=True),
    "stuck_first_seen": Seam(_AGENT, "LocalElasticAgent._uninterruptible_state_first_seen", STUCK_RANKS, made=True),
}

ABSENT = object()  # what `found` gives for a name this torch lacks (a seam's own value may be None)
_said: set[str] = set()


def found(name: str, made_by: object = None, quiet: bool = False) -> Any:
    """SEAMS[name] in the running torch: the function or the class's method, or for an attribute torch's `__init__`
    makes, its value on `made_by`; ABSENT when this torch lacks it (its feature is then off, said once unless
    `quiet`)."""
    seam = SEAMS[name]
    *path, last = seam.attribute.split(".")
    try:
        if seam.made:
            return vars(made_by)[last]
        place: Any = importlib.import_module(seam.module)
        for part in path:
            place = getattr(place, part)
        return getattr(place, last)
    except (AttributeError, KeyError):
        if not quiet:
            missing(name)
        return ABSENT


def lacking(feature: str, made_by: object) -> str | None:
    """The first seam of `feature` this torch lacks (said once), looked up with `made_by`, the object torch's
    `__init__` made; None when it has them all."""
    return next((name for name, seam in SEAMS.items() if seam.feature == feature and found(name, made_by) is ABSENT),
                None)


def missing(name: str) -> None:
    """Say once per feature, on the launcher's stderr, that SEAMS[name] is not in this torch."""
    seam = SEAMS[name]
    if seam.feature in _said:
        return
    _said.add(seam.feature)
    terminal(2).note(f"note: torch {torch_version()} has no {seam.module}.{seam.attribute}: {seam.feature} is off; "
                     "the job runs as under torchrun")


def torch_version() -> str:
    """The running torch's version, as its notes name it."""
    return getattr(sys.modules.get("torch"), "__version__", "?")
