"""What torch's `launch_agent` does (torch/distributed/launcher/api.py), with our agent: the rendezvous handler,
the worker spec, `agent.run()`, the events torch records, and the handler's shutdown; torch keeps the rendezvous,
the restarts and the membership. The ranks are a rank group of ours (launcher/run/rank_agent.py).
"""

from __future__ import annotations

import os

from torch.distributed.elastic import events, metrics
from torch.distributed.elastic.agent.server.api import WorkerSpec
from torch.distributed.elastic.rendezvous import RendezvousParameters
from torch.distributed.elastic.rendezvous import registry as rdzv_registry
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint
from torch.distributed.launcher.api import LaunchConfig

from launcher.contract.job_config import JobConfig
from launcher.contract.names import FAILURE_STATUS, SUCCESS_STATUS
from launcher.run.job_outcome import JobOutcome
from launcher.run.job_scope import JobFolders
from launcher.run.job_signals import RanksStopped, StopState
from launcher.run.rank_agent import RankGroupAgent
from launcher.run.rank_start import SIGNALS_VAR

__all__ = ["run_agent"]


def run_agent(elastic: LaunchConfig, argv: list[str], config: JobConfig, folders: JobFolders,
              stopping: StopState) -> JobOutcome:
    """Run the node's ranks under torch elastic's agent to the end: success, or the first failure's account.
    A stop signal raises RanksStopped (`stopping`, the job's stop), --timeout JobTimeout
    (launcher/run/job_outcome.py), once the ranks are stopped. The ranks answer for their stacks in the job's
    private folder."""
    params = RendezvousParameters(backend=elastic.rdzv_backend, endpoint=elastic.rdzv_endpoint, run_id=elastic.run_id,
                                  min_nodes=elastic.min_nodes, max_nodes=elastic.max_nodes,
                                  local_addr=elastic.local_addr, **elastic.rdzv_configs)
    os.environ[SIGNALS_VAR] = elastic.signals_to_handle
    agents: list[RankGroupAgent] = []
    with stopping.ranks_running(lambda signum: agents[0].send(signum) if agents else 0):
        master_addr, master_port = _static_master(params)
        spec = WorkerSpec(role=elastic.role, local_world_size=elastic.nproc_per_node, entrypoint=argv[0],
                          args=tuple(argv[1:]), rdzv_handler=rdzv_registry.get_rendezvous_handler(params),
                          max_restarts=elastic.max_restarts, monitor_interval=elastic.monitor_interval,
                          master_addr=master_addr, master_port=master_port, local_addr=elastic.local_addr,
                          event_log_handler=elastic.event_log_handler,
                          duplicate_stdout_filters=elastic.duplicate_stdout_filters,
                          duplicate_stderr_filters=elastic.duplicate_stderr_filters,
                          virtual_local_rank=elastic.virtual_local_rank)
        agent = RankGroupAgent(spec=spec, logs_specs=elastic.logs_specs, shutdown_timeout=elastic.shutdown_timeout,
                               config=config, stopping=stopping, folders=folders)
        agents.append(agent)
        shut_down_rendezvous = True
        try:
            metrics.initialize_metrics(metrics.MetricsConfig(elastic.metrics_cfg))
            result = agent.run()
            events.record(agent.get_event_succeeded(), elastic.event_log_handler)
        except RanksStopped:
            shut_down_rendezvous = False  # as torch's on a signal: the rendezvous stays open to the other nodes
            events.record(agent.get_event_failed(), elastic.event_log_handler)
            raise
        except Exception:
            events.record(agent.get_event_failed(), elastic.event_log_handler)
            raise
        finally:
            if shut_down_rendezvous:
                spec.rdzv_handler.shutdown()
    if agent.wedged is not None:  # torch leaves the result UNHEALTHY, not failed: torchrun would exit 0
        return JobOutcome(FAILURE_STATUS, agent.wedged)
    if result is not None and result.is_failed() and agent.group is not None:  # None: a graceful rendezvous exit
        return agent.group.failure_outcome()
    return JobOutcome(SUCCESS_STATUS)


def _static_master(params: RendezvousParameters) -> tuple[str | None, int | None]:
    """torch's static rendezvous names the master in its endpoint; the others leave it to the rendezvous."""
    if params.backend != "static":
        return None, None
    return parse_rendezvous_endpoint(params.endpoint, default_port=-1)
