"""What torch's `launch_agent` does (torch/distributed/launcher/api.py), with our agent: the rendezvous handler,
the worker spec, `agent.run()`, the events torch records, and the handler's shutdown; torch keeps the rendezvous,
the restarts and the membership. The ranks are a rank group of ours (launcher/run/engine/rank_agent.py), or, in a
torch without one of the agent's seams our group needs (launcher/run/engine/engine_seams.py), torch's own agent's, as
torchrun runs it. The worker spec and the rendezvous parameters are built from the node's plan, as torchrun's
`LaunchConfig` would give them.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from torch.distributed.elastic import events, metrics
from torch.distributed.elastic.agent.server.api import RunResult, WorkerSpec, WorkerState
from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.rendezvous import RendezvousHandler, RendezvousParameters
from torch.distributed.elastic.rendezvous import registry as rdzv_registry
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

from launcher.contract.job_config import NodePlan
from launcher.contract.names import FAILURE_STATUS, SUCCESS_STATUS
from launcher.run.engine.rank_agent import RankGroupAgent
from launcher.run.failure.rank_failure import failure_from_engine
from launcher.run.scope.job_outcome import JobOutcome
from launcher.run.scope.job_scope import JobFolders
from launcher.run.scope.job_signals import RanksStopped, StopState
from launcher.signal_rules import exit_status

__all__ = ["run_agent", "rendezvous_parameters", "worker_spec"]

# torchrun's rendezvous timeout where neither the rendezvous nor --rdzv-conf gives one (LaunchConfig's default).
_DEFAULT_RDZV_TIMEOUT = 900


def run_agent(plan: NodePlan, argv: list[str], logs_specs: object, folders: JobFolders,
              stopping: StopState) -> JobOutcome:
    """Run the node's ranks under torch elastic's agent to the end: success, or the first failure's account.
    A stop signal raises RanksStopped (`stopping`, the job's stop), --timeout JobTimeout
    (launcher/run/scope/job_outcome.py), once the ranks are stopped. The ranks answer for their stacks in the job's
    private folder. Each rank runs `argv`; `logs_specs` is torch's layout of their logs."""
    engine = plan.job.settings.engine
    params = rendezvous_parameters(plan)
    agents: list[LocalElasticAgent] = []
    with stopping.ranks_running(lambda signum: agents[0].send(signum) if agents and _ours(agents[0]) else 0):
        spec = worker_spec(plan, argv, params, rdzv_registry.get_rendezvous_handler(params))
        agent = RankGroupAgent(spec=spec, logs_specs=logs_specs, plan=plan, stopping=stopping, folders=folders)
        if not agent.fits_this_torch():
            agent = LocalElasticAgent(spec=spec, logs_specs=logs_specs,
                                      shutdown_timeout=math.ceil(plan.job.settings.grace_period))
        agents.append(agent)
        shut_down_rendezvous = True
        try:
            metrics.initialize_metrics(metrics.MetricsConfig({}))
            result = agent.run()
            events.record(agent.get_event_succeeded(), engine.event_log_handler)
        except (RanksStopped, SignalException):
            shut_down_rendezvous = False  # as torch's on a signal: the rendezvous stays open to the other nodes
            events.record(agent.get_event_failed(), engine.event_log_handler)
            raise
        except Exception:
            events.record(agent.get_event_failed(), engine.event_log_handler)
            raise
        finally:
            if shut_down_rendezvous:
                spec.rdzv_handler.shutdown()
    if not _ours(agent):
        return _torch_outcome(result)
    if agent.wedged is not None:  # torch leaves the result UNHEALTHY, not failed: torchrun would exit 0
        return JobOutcome(FAILURE_STATUS, agent.wedged)
    if result is not None and result.is_failed() and agent.group is not None:  # None: a graceful rendezvous exit
        return agent.group.failure_outcome()
    return JobOutcome(SUCCESS_STATUS)


def _ours(agent: LocalElasticAgent) -> TypeGuard[RankGroupAgent]:
    """Whether `agent` drives our rank group (else torch's own agent runs the ranks)."""
    return isinstance(agent, RankGroupAgent)


def _torch_outcome(result: RunResult | None) -> JobOutcome:
    """How the job ended under torch's own agent: the earliest failure (torchrun's root cause), from what torch
    reports of it."""
    if result is not None and result.state == WorkerState.UNHEALTHY:
        return JobOutcome(FAILURE_STATUS, "torch elastic's D-state check stopped the ranks, without a restart")
    if result is None or not result.is_failed():
        return JobOutcome(SUCCESS_STATUS)
    rank, failure = min(result.failures.items(), key=lambda item: item[1].timestamp)
    account = failure_from_engine(rank, failure.exitcode, failure.error_file, ())
    return JobOutcome(exit_status(failure.exitcode), account.summary(), account)


def rendezvous_parameters(plan: NodePlan) -> RendezvousParameters:
    """The node's rendezvous as torch's handler takes it. Where torchrun runs a job as standalone (c10d on
    localhost:0) its ranks get this host's name and a fresh run id, and so do ours; a rendezvous of ours on a free
    port otherwise names this node by --master-addr (or --local-addr)."""
    config, settings = plan.job, plan.job.settings
    meeting, engine = plan.rendezvous, settings.engine
    own_free_port = meeting.endpoint.endswith(":0") and not plan.standalone
    options = {**meeting.options, **engine.rdzv_conf}
    options.setdefault("timeout", _DEFAULT_RDZV_TIMEOUT)
    low, high = config.node_range
    return RendezvousParameters(backend=meeting.backend, endpoint=meeting.endpoint, run_id=plan.run_id,
                                min_nodes=low, max_nodes=high,
                                local_addr=engine.local_addr or (settings.master_addr if own_free_port else None),
                                **options)


def worker_spec(plan: NodePlan, argv: list[str], params: RendezvousParameters,
                rdzv_handler: RendezvousHandler | None) -> WorkerSpec:
    """The node's ranks, each running `argv`, as torch's agent runs them, meeting through `rdzv_handler` (made from
    `params`)."""
    settings = plan.job.settings
    engine = settings.engine
    master_addr, master_port = _static_master(params)
    return WorkerSpec(role=engine.role, local_world_size=plan.local_world_size, entrypoint=argv[0],
                      args=tuple(argv[1:]), rdzv_handler=rdzv_handler, max_restarts=settings.max_restarts,
                      monitor_interval=engine.monitor_interval, master_addr=master_addr, master_port=master_port,
                      local_addr=params.local_addr, event_log_handler=engine.event_log_handler,
                      duplicate_stdout_filters=list(engine.duplicate_stdout_filters) or None,
                      duplicate_stderr_filters=list(engine.duplicate_stderr_filters) or None,
                      virtual_local_rank=engine.virtual_local_rank)


def _static_master(params: RendezvousParameters) -> tuple[str | None, int | None]:
    """torch's static rendezvous names the master in its endpoint; the others leave it to the rendezvous."""
    if params.backend != "static":
        return None, None
    return parse_rendezvous_endpoint(params.endpoint, default_port=-1)
