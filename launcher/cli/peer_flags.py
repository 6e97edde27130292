"""The click options for torchrun's and DeepSpeed's flags that land in no field of their own: those the launch
reads here (`launcher.cli.flags` packs their values in `PeerFlags`) and those refused in one line that says what
to use instead. torchrun's flags that reach the engine are declared on EngineOptions' fields
(launcher.contract.engine_options); docs/FLAGS.md is the table of all of them.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from launcher.cli.numbers import Integer
from launcher.contract.flag_field import both

__all__ = ["peer_options", "REFUSED"]

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


_OPTIONS = [
    # torchrun (those that reach the engine are declared on EngineOptions' fields)
    click.option(*both("start-method"), "start_method", type=click.Choice(["spawn", "fork", "forkserver"]),
                 default="spawn", show_default=True, help="Only spawn: every rank is a fresh interpreter."),
    click.option(*both("run-path"), "run_path", is_flag=True, help="Run SCRIPT by path (runpy.run_path), "
                 "as every script runs."),
    click.option(*both("shutdown-timeout"), "shutdown_timeout", type=Integer(0), metavar="SECONDS",
                 help="torchrun's name for --grace-period."),
    click.option(*both("numa-binding"), "numa_binding", hidden=True),
    # DeepSpeed
    click.option(*both("no-local-rank"), "no_local_rank", is_flag=True,
                 help="Accepted: the script never gets --local_rank (LOCAL_RANK is in its environment)."),
    click.option(*both("no-ssh-check"), "no_ssh_check", is_flag=True, help="Accepted: no ssh check is made."),
    click.option(*both("no-ssh"), "no_ssh", is_flag=True,
                 help="With --hostfile and --node-rank: start only this node's ranks, without ssh."),
    click.option(*both("force-multi"), "force_multi", is_flag=True,
                 help="Accepted with --hostfile: every hostfile launch goes through the runner."),
    click.option(*both("enable-each-rank-log"), "each_rank_log", metavar="DIR",
                 help="Each rank's stdout and stderr in files under DIR (as --log-dir)."),
    click.option(*both("bind-cores-to-rank"), "bind_cores_to_rank", is_flag=True,
                 help="Pin each local rank to its own share of the cores."),
    click.option(*both("bind-core-list"), "bind_core_list", metavar="LIST",
                 help="The cores to share out, e.g. 0-3,8 (implies --bind_cores_to_rank)."),
    click.option(*both("launcher-args"), "launcher_args", default="", metavar="ARGS",
                 help="More arguments for the runner (ssh, pdsh, mpirun, srun), as one quoted string."),
    click.option("--comment", default="", metavar="TEXT", help="srun's --comment (with --launcher slurm)."),
    click.option("--account", default="", metavar="NAME", help="srun's --account (with --launcher slurm)."),
    click.option(*both("venv-script"), "venv_script", metavar="PATH",
                 help="A script every node sources before its launcher starts (with --hostfile)."),
    click.option(*both("save-pid"), "save_pid", is_flag=True,
                 help="Write this launcher's pid to /tmp/<pid>.deepspeed while the job runs."),
    *(click.option(*both(name.replace("_", "-")), name, hidden=True, is_flag=name == "elastic_training")
      for name in REFUSED if name != "numa_binding"),
]


def peer_options(command: Callable) -> Callable:
    """Decorate `command` with every option above."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command

