"""Each rank's environment on the direct path: torch elastic's worker variables, with the values torchrun
2.13 gives the same job (torch/distributed/elastic/agent/server/local_elastic_agent.py, `_start_workers`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from launcher.contract.job_config import JobConfig
from launcher.contract.names import AGREEMENT_VAR, LAUNCHER_PID_VAR

__all__ = ["worker_env"]

# torch's launch_agent puts this in its own environment, so every rank inherits it.
_SIGNALS_VAR = "TORCHELASTIC_SIGNALS_TO_HANDLE"


def worker_env(config: JobConfig, local_rank: int, job_run_id: str, master: tuple[str, int],
               environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of local rank `local_rank` (its error file is added where its logs are made)."""
    nodes = config.node_range[0]  # fixed on the direct path
    world = config.world_size  # each node's rank count where they differ (a hostfile's table)
    rank = str(config.global_rank(local_rank))
    return {
        **environ,
        **config.rank_env,
        LAUNCHER_PID_VAR: str(os.getpid()),
        _SIGNALS_VAR: config.settings.engine.signals_to_handle,
        "RANK": rank,
        "GROUP_RANK": str(config.node_rank),
        "ROLE_RANK": rank,
        "ROLE_NAME": config.settings.engine.role,
        "LOCAL_WORLD_SIZE": str(config.nproc_per_node),
        "WORLD_SIZE": world,
        "GROUP_WORLD_SIZE": str(nodes),
        "ROLE_WORLD_SIZE": world,
        "MASTER_ADDR": master[0],
        "MASTER_PORT": str(master[1]),
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": job_run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "LOCAL_RANK": str(local_rank),
        # Several nodes: no launcher imports torch, so the ranks agree (launcher/rank/node_agreement.py).
        **({AGREEMENT_VAR: str(config.settings.rdzv_timeout)} if nodes > 1 else {}),
    }
