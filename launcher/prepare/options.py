"""What the user asked for (`LaunchOptions`): the command line as plain values, which `prepare_job` resolves
into one `JobConfig` (launcher.contract.job_config).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from launcher.contract.job_config import Program, RunSettings
from launcher.prepare.local_slots import LocalSelection

__all__ = ["LaunchOptions"]


@dataclass(frozen=True)
class LaunchOptions:
    """The command line, as plain values: what prepare_job resolves."""

    program: Program
    settings: RunSettings = field(default_factory=RunSettings)
    compile_backend: str | None = None
    accelerator: str | None = None
    ds_config: str | None = None
    nproc_per_node: str = "1"
    nnodes: str = "1"
    node_rank: int | None = None
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    env_file: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    local_selection: LocalSelection | None = None
