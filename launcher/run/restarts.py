"""Restarts of the worker group that re-form it: every attempt's ranks meet in a store of their own.

By default torch elastic lets the ranks share the agent's rendezvous store across attempts, so the
ranks of a restart can read the addresses the previous attempt's ranks left there ("Connection refused"
in gloo's connectFullMesh, or a hang in init_process_group). When the group can be restarted (restarts
allowed, or a node range that admits new nodes), rank 0 of each attempt hosts a fresh store instead,
at a port chosen for that attempt.
"""

from __future__ import annotations

from collections.abc import Mapping

from launcher.contract.job_config import JobConfig

__all__ = ["restart_environment", "SHARE_STORE_VAR"]

SHARE_STORE_VAR = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


def restart_environment(config: JobConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the agent needs for restartable groups (a value the user set is kept)."""
    low, high = config.node_range
    if (config.settings.max_restarts > 0 or low != high) and SHARE_STORE_VAR not in environ:
        return {SHARE_STORE_VAR: "1"}
    return {}
