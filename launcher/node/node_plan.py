"""This node's plan (`NodePlan`, launcher.contract.job_config): the job placed on this node, once, before anything
starts (`plan_node`). It reads the node's facts (its accelerator, rank, devices, host) and the launcher's
environment, decides the rendezvous and the launch path, and derives the rest from them: the run id, the master
address, standalone-likeness, each rank's streams (`--redirects` and `--tee` parsed once), torchrun's prefix
template, and the environment every rank starts from. The dry run shows it; the run reads it and no environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from accelerators import Accelerator, accelerator_class
from launcher.contract.engine_options import parse_std
from launcher.contract.job_config import AGREEMENT_PREFIX, STDERR, STDOUT, JobConfig, NodePlan, Rendezvous
from launcher.contract.names import (COMPILE_CACHE_VAR, COMPILE_STORE_VAR, CPU_BINDING_VAR, DEFAULT_MASTER_PORT,
                                     LAUNCHER_PID_VAR, SIGNALS_VAR)
from launcher.node.addresses import Placement, place_node
from launcher.node.node_env import (check_binding_env, check_virtual_devices, core_binding, flight_recorder_environment,
                                    node_environment, physical_cores)
from launcher.node.path_choice import engine_reason
from launcher.node.rendezvous_choice import master_addr, rendezvous, run_id, standalone_like

__all__ = ["plan_node", "TEMPLATE_ENV", "SHARE_STORE_VAR"]

# torchrun's own way to ask for a prefix; when it is set it is used as it is, as torchrun does.
TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
# Restartable groups re-form in a store of their own: by default torch elastic lets the ranks share the agent's
# rendezvous store across attempts, so a restart's ranks could read the addresses the previous attempt's ranks
# left there ("Connection refused" in gloo's connectFullMesh, or a hang in init_process_group).
SHARE_STORE_VAR = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


def plan_node(job: JobConfig, accelerator: str, node_rank: int, environ: Mapping[str, str],
              slots: tuple[int, ...] | None = None, own_host: str | None = None,
              job_environ: Mapping[str, str] | None = None) -> NodePlan:
    """`job` placed on this node: node `node_rank`, on `accelerator`, with the devices `slots` (None: every node runs
    the job's count, on the devices it sees), `own_host` its name in the node table (None: found from the
    addresses), the launcher running with `environ` and the job's values over it in `job_environ` (default
    `environ`)."""
    seen = job_environ if job_environ is not None else environ
    local_world_size = len(slots) if slots is not None else job.nproc_per_node
    device = accelerator_class(accelerator)
    node_env, placement = _node_env(job, device, local_world_size, slots, own_host, seen)
    meeting = rendezvous(job, node_rank, accelerator, placement)
    reason = engine_reason(job, meeting.backend, environ)
    redirects, tee = _asked(job, "--redirects", local_world_size), _asked(job, "--tee", local_world_size)
    ours = STDOUT | STDERR if job.settings.log_dir else STDERR
    # Every stream the user leaves alone as we always do: stderr teed (kept for the failure summary), stdout
    # inherited, or teed too with --log-dir.
    streams = tuple((redirected, teed | (ours & ~(redirected | teed))) for redirected, teed in zip(redirects, tee))
    rank_env = job.rank_env(node_env)
    if job.settings.engine.virtual_local_rank:
        check_virtual_devices(local_world_size, device.visible_devices_env, {**seen, **rank_env})
    ranks_environ = {**environ, **rank_env}
    ranks_environ.update(_restart_environment(job, ranks_environ, meeting))
    ranks_environ.update({LAUNCHER_PID_VAR: str(os.getpid()), SIGNALS_VAR: job.settings.engine.signals_to_handle})
    return NodePlan(job=job, accelerator=accelerator, node_rank=node_rank, local_world_size=local_world_size,
                    node_env=node_env, rendezvous=meeting, engine_reason=reason, run_id=run_id(job),
                    master_addr=master_addr(job), standalone=standalone_like(job),
                    streams=streams, tee_asked=tuple(tee), prefix_template=ranks_environ.get(TEMPLATE_ENV) or None,
                    visible_devices_env=device.visible_devices_env, environ=MappingProxyType(ranks_environ))


def _node_env(job: JobConfig, device: type[Accelerator], local_world_size: int, slots: tuple[int, ...] | None,
              own_host: str | None, environ: Mapping[str, str]) -> tuple[dict[str, str], Placement | None]:
    """This node's own part of every rank's environment on `device` (devices, threads, cores, the flight recorder,
    its side of the rendezvous), and, with several nodes, its placement among them."""
    devices_env = device.visible_devices_env
    devices = {devices_env: ",".join(map(str, slots))} if slots is not None and devices_env else {}
    placement = None
    if job.nnodes != "1":
        settings = job.settings
        endpoint = job.rdzv_endpoint or f"{settings.master_addr}:{settings.master_port or DEFAULT_MASTER_PORT}"
        placement = place_node(own_host, endpoint, environ)
    if job.settings.bind_cores is None:  # no binding flag: the ranks would inherit the user's own binding
        check_binding_env(environ, "the env file" if CPU_BINDING_VAR in job.job_env else "the environment")
    node_env = {
        **devices,
        **(placement.rank_env if placement else {}),
        **node_environment(device.name, local_world_size, environ, physical_cores(),
                           compile_once=job.job_env.get(COMPILE_CACHE_VAR) in ("job", "node")),
        **core_binding(job.settings.bind_cores, local_world_size, environ),
        **flight_recorder_environment(device.communication_backend, job.settings.log_dir, environ),
    }
    return node_env, placement


def _asked(job: JobConfig, flag: str, local_world_size: int) -> list[int]:
    """`--redirects` or `--tee` (checked before the launch) for each local rank."""
    engine = job.settings.engine
    asked = parse_std(flag, engine.redirects if flag == "--redirects" else engine.tee)
    return [asked if isinstance(asked, int) else asked.get(rank, 0) for rank in range(local_world_size)]


def _restart_environment(job: JobConfig, environ: Mapping[str, str], meeting: Rendezvous) -> dict[str, str]:
    """The variables the agent needs for restartable groups (restarts allowed, or a node range that admits new
    nodes): rank 0 of each attempt hosts a fresh store at a port chosen for that attempt (a value the user set is
    kept). With several nodes meeting at a known port, the job's compiled graphs are kept in the rendezvous's store,
    which outlives the attempts (COMPILE_STORE_VAR)."""
    low, high = job.node_range
    if job.settings.max_restarts == 0 and low == high:
        return {}
    found = {} if SHARE_STORE_VAR in environ else {SHARE_STORE_VAR: "1"}
    port = meeting.endpoint.rpartition(":")[2]
    kind = meeting.backend.removeprefix(AGREEMENT_PREFIX)
    if high > 1 and kind in ("c10d", "static") and port.isdigit() and int(port) > 0:
        found[COMPILE_STORE_VAR] = meeting.endpoint
    return found
