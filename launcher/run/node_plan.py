"""This node's plan: what the node derives from its placed job, its facts and its environment, once, at the start of
the run (`plan_node`, called by `run_job`); both drivers, the rank logs and the rank environment read it, and no
environment.

The job (`JobConfig`) is what the head decides and every node receives; the plan adds what only this node knows:
the run id, the master address, whether torchrun would run the job as standalone, each rank's streams
(`--redirects` and `--tee` parsed once), torchrun's prefix template, and the environment every rank starts from.

Prefixes as torchrun's: a stream the user teed (`--tee`) is shown as torchrun shows it: every line under torch
elastic's own header, `[{role}{local_rank}]:` (`[default0]:`). The stderr we tee ourselves (kept for the failure
summary) gets one `[rankN]:` per line of a multi-rank job, never doubled when torch already wrote `[rankN]:` itself,
and none for a one-rank job. The stdout we tee for --log-dir is shown bare, as without the flag. A template in
torchrun's variable is used as it is, as torchrun does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from string import Template
from types import MappingProxyType

from accelerators import accelerator_class
from launcher.contract.engine_options import parse_std
from launcher.contract.job_config import JobConfig
from launcher.contract.names import LAUNCHER_PID_VAR
from launcher.run.rank_start import SIGNALS_VAR
from launcher.run.rendezvous.choice import master_addr, run_id, standalone_like

__all__ = ["NodePlan", "plan_node", "TEMPLATE_ENV", "SHARE_STORE_VAR"]

# torchrun's own way to ask for a prefix; when it is set it is used as it is, as torchrun does.
TEMPLATE_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
# Restartable groups re-form in a store of their own: by default torch elastic lets the ranks share the agent's
# rendezvous store across attempts, so a restart's ranks could read the addresses the previous attempt's ranks
# left there ("Connection refused" in gloo's connectFullMesh, or a hang in init_process_group).
SHARE_STORE_VAR = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"
_OUT, _ERR = 1, 2


@dataclass(frozen=True)
class NodePlan:
    """This node's part of the job, derived once; `environ` is read-only."""

    job: JobConfig
    run_id: str  # --rdzv-id, else a fresh uuid where torchrun runs standalone, else `none`
    # MASTER_ADDR on the direct path, as torchrun gives it (launcher/run/rendezvous/choice.py); on the engine path
    # torch's rendezvous names the master (None)
    master_addr: str | None
    standalone: bool  # torchrun would run the job as --standalone
    streams: tuple[tuple[int, int], ...]  # each local rank's (redirected, teed) streams, 1 stdout and 2 stderr
    tee_asked: tuple[int, ...]  # each local rank's streams the user teed (--tee): they keep torch's header
    prefix_template: str | None  # torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, when set
    visible_devices_env: str | None  # the variable that lists the accelerator's visible devices
    environ: Mapping[str, str]  # what every rank starts from: the launcher's, the job's, the node's, torch's

    @property
    def engine_reason(self) -> str | None:
        """Why torch elastic's agent starts the ranks; None: the launcher starts them itself (the direct path)."""
        return self.job.engine_reason

    def prefix(self, local_rank: int, stream: int) -> bytes:
        """The prefix of every line of local rank `local_rank`'s stream (1 stdout, 2 stderr) on the terminal."""
        role = self.job.settings.engine.role
        teed = self.tee_asked[local_rank] & stream
        if stream == _OUT and not teed:  # the copy --log-dir keeps: the terminal shows what it shows without it
            text = ""
        elif self.prefix_template:
            text = self.torch_header(local_rank).decode("utf-8", "replace")
        elif teed:
            text = f"[{role}{local_rank}]:"
        elif self.job.node_range[1] * self.job.nproc_per_node > 1:
            text = f"[rank{self.job.global_rank(local_rank)}]:"
        else:
            text = ""
        return text.encode("utf-8", "replace")

    def torch_header(self, local_rank: int) -> bytes:
        """torch's own header of a teed line: `[{role}{local_rank}]:`, or torchrun's template."""
        role = self.job.settings.engine.role
        text = (Template(self.prefix_template).safe_substitute(role_name=role, rank=self.job.global_rank(local_rank),
                                                               local_rank=local_rank)
                if self.prefix_template else f"[{role}{local_rank}]:")
        return text.encode("utf-8", "replace")


def plan_node(config: JobConfig, environ: Mapping[str, str]) -> NodePlan:
    """The plan of `config`, placed on this node, whose launcher runs with `environ`."""
    redirects, tee = _asked(config, "--redirects"), _asked(config, "--tee")
    ours = _OUT | _ERR if config.settings.log_dir else _ERR
    # Every stream the user leaves alone as we always do: stderr teed (kept for the failure summary), stdout
    # inherited, or teed too with --log-dir.
    streams = tuple((redirected, teed | (ours & ~(redirected | teed))) for redirected, teed in zip(redirects, tee))
    ranks_environ = {**environ, **config.rank_env}
    ranks_environ.update(_restart_environment(config, ranks_environ))
    ranks_environ.update({LAUNCHER_PID_VAR: str(os.getpid()), SIGNALS_VAR: config.settings.engine.signals_to_handle})
    direct = config.engine_reason is None
    return NodePlan(job=config, run_id=run_id(config), master_addr=master_addr(config) if direct else None,
                    standalone=standalone_like(config), streams=streams, tee_asked=tuple(tee),
                    prefix_template=ranks_environ.get(TEMPLATE_ENV) or None,
                    visible_devices_env=accelerator_class(config.accelerator).visible_devices_env,
                    environ=MappingProxyType(ranks_environ))


def _asked(config: JobConfig, flag: str) -> list[int]:
    """`--redirects` or `--tee` (checked before the launch) for each local rank."""
    engine = config.settings.engine
    asked = parse_std(flag, engine.redirects if flag == "--redirects" else engine.tee)
    return [asked if isinstance(asked, int) else asked.get(rank, 0) for rank in range(config.nproc_per_node)]


def _restart_environment(config: JobConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the agent needs for restartable groups (restarts allowed, or a node range that admits new
    nodes): rank 0 of each attempt hosts a fresh store at a port chosen for that attempt. A value the user set is
    kept."""
    low, high = config.node_range
    if (config.settings.max_restarts > 0 or low != high) and SHARE_STORE_VAR not in environ:
        return {SHARE_STORE_VAR: "1"}
    return {}
