"""torchrun's and DeepSpeed's flags that land in no field of the job: those the launch reads
(`PeerFlags`, each declared on its field as launcher.contract.flag_field says) and those refused in one line
that says what to use instead (`REFUSED`). torchrun's flags that reach the engine are declared on
EngineOptions' fields (launcher.contract.engine_options); docs/FLAGS.md is the table of all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import click

from launcher.cli.declared_options import options_of
from launcher.contract.flag_field import Number, both, flag

__all__ = ["PeerFlags", "peer_options", "REFUSED"]

# Flags refused outright: parameter name -> (flag as typed, why, and what to use instead).
REFUSED: dict[str, tuple[str, str]] = {
    "numa_binding": ("--numa-binding", "not supported; pin ranks to cores with --bind_cores_to_rank "
                     "[--bind_core_list LIST]"),
    "autotuning": ("--autotuning", "the DeepSpeed autotuner runs only under the deepspeed launcher; "
                   "run `deepspeed --autotuning ...` once, then launch with the config it writes"),
    "elastic_training": ("--elastic_training", "use torch elastic: --nnodes MIN:MAX with --rdzv-endpoint "
                         "HOST:PORT on every node"),
    "min_elastic_nodes": ("--min_elastic_nodes", "use --nnodes MIN:MAX with --rdzv-endpoint HOST:PORT"),
    "max_elastic_nodes": ("--max_elastic_nodes", "use --nnodes MIN:MAX with --rdzv-endpoint HOST:PORT"),
}


@dataclass(frozen=True)
class PeerFlags:
    """torchrun's and DeepSpeed's flags that land in no field of the job, each declared on its field (read by
    `launch_options`, launcher.cli.flags); the refused ones by parameter name in `refused`."""

    # torchrun
    start_method: str = flag(*both("start-method"), default="spawn", choices=("spawn", "fork", "forkserver"),
                             show_default=True, help="Only spawn: every rank is a fresh interpreter.")
    run_path: bool = flag(*both("run-path"), default=False,
                          help="Run SCRIPT by path, as every script runs.")
    shutdown_timeout: int | None = flag(*both("shutdown-timeout"), default=None, number=Number(minimum=0),
                                        metavar="SECONDS", help="torchrun's name for --grace-period.")
    # DeepSpeed
    no_local_rank: bool = flag(*both("no-local-rank"), default=False,
                               help="Accepted: the script never gets --local_rank (LOCAL_RANK is in its environment).")
    no_ssh_check: bool = flag(*both("no-ssh-check"), default=False, help="Accepted: no ssh check is made.")
    no_ssh: bool = flag(*both("no-ssh"), default=False,
                        help="With --hostfile and --node-rank: start only this node's ranks, without ssh.")
    force_multi: bool = flag(*both("force-multi"), default=False,
                             help="Accepted with --hostfile: every hostfile launch goes through the runner.")
    each_rank_log: str | None = flag(*both("enable-each-rank-log"), default=None, metavar="DIR",
                                     help="Each rank's stdout and stderr in files under DIR (as --log-dir).")
    bind_cores_to_rank: bool = flag(*both("bind-cores-to-rank"), default=False,
                                    help="Pin each local rank to its own share of the cores.")
    bind_core_list: str | None = flag(*both("bind-core-list"), default=None, metavar="LIST",
                                      help="The cores to share out, e.g. 0-3,8 (implies --bind_cores_to_rank).")
    save_pid: bool = flag(*both("save-pid"), default=False,
                          help="Write this launcher's pid to /tmp/<pid>.deepspeed while the job runs.")
    refused: dict[str, object] = field(default_factory=dict)


# The refused flags, hidden from the help.
_REFUSED_OPTIONS = [click.option(*both(name.replace("_", "-")), name, hidden=True, is_flag=name == "elastic_training")
                    for name in REFUSED]


def peer_options(command: Callable) -> Callable:
    """Decorate `command` with PeerFlags' options and the refused ones."""
    for option in reversed([*options_of(PeerFlags), *_REFUSED_OPTIONS]):
        command = option(command)
    return command
