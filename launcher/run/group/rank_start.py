"""torch elastic's worker variables that say where a rank stands (`RankPlace`), as torchrun 2.13 gives them
(torch/distributed/elastic/agent/server/local_elastic_agent.py, `_start_workers` and `_set_local_rank_env`).

The direct path places each rank from its node plan (`NodePlan.rank_place`, launcher/run/direct_run.py); the engine
path from the worker group torch's rendezvous formed (launcher/run/engine/rank_agent.py). Either way `worker_env` writes the variables
over the environment the plan holds for every rank.
"""

from __future__ import annotations

from collections.abc import Mapping

from launcher.contract.job_config import RankPlace

__all__ = ["worker_env"]


def worker_env(place: RankPlace, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with torch elastic's variables for the rank at `place` (its error file is added where its logs
    are made)."""
    return {
        **environ,
        "RANK": str(place.rank),
        "GROUP_RANK": str(place.group_rank),
        "ROLE_RANK": str(place.role_rank),
        "ROLE_NAME": place.role,
        "LOCAL_WORLD_SIZE": str(place.local_world_size),
        "WORLD_SIZE": str(place.world_size),
        "GROUP_WORLD_SIZE": str(place.group_world_size),
        "ROLE_WORLD_SIZE": str(place.role_world_size),
        "MASTER_ADDR": place.master[0],
        "MASTER_PORT": str(place.master[1]),
        "TORCHELASTIC_RESTART_COUNT": str(place.restart_count),
        "TORCHELASTIC_MAX_RESTARTS": str(place.max_restarts),
        "TORCHELASTIC_RUN_ID": place.run_id,
        "TORCHELASTIC_USE_AGENT_STORE": str(place.use_agent_store),
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        **_local_device(place, environ),
    }


def _local_device(place: RankPlace, environ: Mapping[str, str]) -> dict[str, str]:
    """LOCAL_RANK, and with --virtual-local-rank the one device the rank sees as device 0: torch's rule
    (`_set_local_rank_env`), the rank's entry of the launcher's list of visible devices, else its local rank, in
    the variable of the job's accelerator (torch's rule writes CUDA's on every device; a CPU job has none)."""
    if not place.virtual_local_rank:
        return {"LOCAL_RANK": str(place.local_rank)}
    name = place.visible_devices_env
    if name is None:
        return {"LOCAL_RANK": "0"}
    visible = environ.get(name)
    device = visible.split(",")[place.local_rank].strip() if visible is not None else str(place.local_rank)
    return {"LOCAL_RANK": "0", name: device}
