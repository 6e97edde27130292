"""What the user asked for (`LaunchOptions`): the command line as plain values, which `prepare_job` resolves
into one `JobConfig` (launcher.contract.job_config). Each option is declared on its field
(launcher.contract.flag_field); `check_options` (launcher.job.validate) runs their checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from accelerators.accelerator import nproc_words
from launcher.contract.flag_field import Number, both, flag
from launcher.contract.program import Program
from launcher.contract.run_settings import RunSettings
from launcher.contract.user_values import HOST, check_given
from launcher.errors import UsageError
from launcher.limits import NODES, PORTS, RANKS_PER_NODE, CountError, whole_number
from launcher.job.local_slots import LocalSelection

__all__ = ["LaunchOptions"]

_RDZV_ID = re.compile(r"[A-Za-z0-9_.:@+-]{1,128}")


def _nproc_per_node(option: str, value: str) -> None:
    """A whole number of ranks within the bound, auto, or a device's torchrun word (resolved on the node)."""
    words = ("auto", *nproc_words())
    if value in words:
        return
    if value.lstrip("-").isascii() and value.lstrip("-").isdigit():
        whole_number(value, option, RANKS_PER_NODE, minimum=1)
    else:
        raise UsageError(option, value, f"expected a whole number (digits 0-9) or {', '.join(words)}")


def _endpoint(option: str, value: str) -> None:
    if not value:
        return
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = value, ""
    if not HOST.fullmatch(host) or (port and not _is_port(port)):
        raise UsageError(option, value, "expected HOST or HOST:PORT with a port from 1 to 65535")


def _is_port(text: str) -> bool:
    try:
        whole_number(text, "port", PORTS, minimum=1)
    except CountError:
        return False
    return True


def _rdzv_id(option: str, value: str) -> None:
    if value and not _RDZV_ID.fullmatch(value):
        raise UsageError(option, value, "expected 1 to 128 letters, digits or ._:@+-")


@dataclass(frozen=True)
class LaunchOptions:
    """The command line, as plain values: what prepare_job resolves."""

    program: Program
    settings: RunSettings = field(default_factory=RunSettings)
    compile_backend: str | None = flag(*both("compile-backend"), default=None, metavar="NAME",
                                       help="torch.compile backend for every rank ('accelerator' = its default). "
                                       "Env: ACCEL_COMPILE_BACKEND.")
    accelerator: str | None = flag("--accelerator", default=None, metavar="NAME", check=check_given,
                                   help="Use this accelerator instead of detecting one. Env: ACCEL_ACCELERATOR.")
    ds_config: str | None = flag(*both("ds-config"), default=None, metavar="PATH", check=check_given,
                                 help="DeepSpeed-style JSON whose compile.backend is used.")
    nproc_per_node: str = flag(*both("nproc-per-node"), default="1", show_default=True, metavar="N|auto|gpu|cpu|xpu",
                               check=_nproc_per_node, help="Ranks on this node; 'auto' = one per device (else per "
                               "CPU), 'gpu'/'xpu' = that device's count, 'cpu' = the CPUs this process may use.")
    nnodes: str = flag("--nnodes", default="1", show_default=True, metavar="N|MIN:MAX", help="Number of nodes.")
    node_rank: int | None = flag(*both("node-rank"), default=None, number=Number(minimum=0, limit=NODES, index=True),
                                 help="This node's rank (default 0, or what Slurm / OpenMPI / pdsh say).")
    rdzv_endpoint: str = flag(*both("rdzv-endpoint"), default="", metavar="HOST:PORT", check=_endpoint,
                              help="Rendezvous endpoint for multi-node jobs.")
    rdzv_id: str = flag(*both("rdzv-id"), default="", metavar="ID", check=_rdzv_id, help="Job id shared by all nodes.")
    env_file: str | None = flag(*both("env-file"), default=None, metavar="PATH", check=check_given,
                                help="Variables for the job; the process environment wins. Default: ./.env if present.")
    extra_env: dict[str, str] = field(default_factory=dict)
    local_selection: LocalSelection | None = None
