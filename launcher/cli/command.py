"""The `accel-launch` command: a thin click layer over `launcher.job.build_job` and the run side's drivers.

All user-facing text of a launch is written here, and every domain error becomes exit status 2 here.

DeepSpeed's `--save_pid` (`save_pid`): the launcher's pid in `/tmp/<pid>.deepspeed` while the job runs, for a
program that started accel-launch and wants the process to signal (deepspeed/launcher/launch.py writes the same file).

The file is made new (never through a link, never over an existing file: that is one line and exit 2, as
DeepSpeed's launcher refuses it too) and removed when the job ends, however it ends short of SIGKILL.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import click

from launcher.cli.declared_options import DECLARED, with_options
from launcher.cli.error_exit import fail, fail_with
from launcher.cli.flags import LaunchFlags, launch_options
from launcher.cli.peer_flags import REFUSED, PeerFlags, peer_options
from launcher.cli.report import WithReport
from launcher.contract.engine_options import DEFAULT_LOGS_SPECS
from launcher.contract.flag_field import both
from launcher.contract.names import COMPILE_SECRET_VAR, ERROR_FILE_VAR, VALIDATION_STATUS
from launcher.contract.program import Program
from launcher.errors import FlagConflictError, LaunchError
from launcher.escaped import escaped_lines, one_line
from launcher.limits import address_space_problem, file_size_problem, open_files_problem
from launcher.head.selection import HostFlags
from launcher.job.build_job import PreparedJob, check_ports, prepare_job
from launcher.job.plan_table import format_plan, plan_rows
from launcher.job.validate import check_options, working_directory
from launcher.signal_rules import start_thread

__all__ = ["accel_launch", "launch", "run_node_job", "save_pid", "remove_pid_file", "PID_FOLDER"]

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")  # DeepSpeed's --log_level choices


_Packed = TypeVar("_Packed")

_CONTEXT = {"allow_interspersed_args": False, "help_option_names": ["-h", "--help"], "max_content_width": 100,
            "auto_envvar_prefix": "PET"}


@click.command(cls=WithReport, context_settings=_CONTEXT)
@with_options(*DECLARED)
@click.option("-m", "--module", is_flag=True, help="Run SCRIPT as a module, like python -m.")
@click.option(*both("no-python"), "no_python", is_flag=True, help="Run SCRIPT as a program, not with python.")
@click.option(*both("dry-run"), "dry_run", is_flag=True, help="Print the resolved plan and start nothing.")
@click.option("-v", "--verbose", is_flag=True, help="Show the launcher's and torch elastic's logs.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors: no launch line (DeepSpeed's, as --log_level error).")
@click.option(*both("log-level"), "log_level", type=click.Choice(LOG_LEVELS), metavar="LEVEL",
              help="DeepSpeed's: debug and info as -v, warning the default, error and critical as -q.")
@with_options(HostFlags)
@peer_options
@click.argument("script", metavar="SCRIPT")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def accel_launch(script: str, script_args: tuple[str, ...], module: bool, no_python: bool, dry_run: bool,
                 verbose: bool, quiet: bool, log_level: str | None, **flags: Any) -> None:
    """Launch SCRIPT on every rank with one validated torch.compile backend.

    Everything after SCRIPT goes to the script untouched. accel-launch report prints what a launch here
    would use (as accel-report), unless a file called report is here to be launched.

    \b
    Example:
      accel-launch --nproc-per-node 2 --compile-backend inductor examples/train.py --steps 5
    """
    if module and no_python:
        raise click.UsageError("-m/--module and --no-python cannot be used together")
    mode = "module" if module else "exec" if no_python else "script"
    verbose, quiet = verbose or log_level in ("debug", "info"), quiet or log_level in ("error", "critical")
    if verbose and quiet:
        raise click.UsageError("-v/--verbose (or --log_level debug/info) and -q/--quiet (or --log_level "
                               "error/critical) cannot be used together")
    _configure_logging(verbose, quiet)
    hosts = _pack(HostFlags, flags)
    peers = _pack(PeerFlags, flags, refused={name: flags.pop(name) for name in REFUSED})
    ours = LaunchFlags(Program(mode, script, tuple(script_args)), flags, verbose, quiet)
    launch(ours, peers, hosts, _given(), dry_run)


def launch(ours: LaunchFlags, peers: PeerFlags, hosts: HostFlags, given: set[str], dry_run: bool) -> None:
    """Check and prepare the launch these flags ask for; print its plan (`dry_run`), or start it and exit
    with its status. `given` names the flags the user set rather than left to their default."""
    try:
        cwd = working_directory()
        options, through_runner = launch_options(ours, peers, hosts, given)
        check_options(options, cwd, head=through_runner)
        job = prepare_job(options, dict(os.environ), cwd, place=not through_runner)
        if through_runner:
            from launcher.head.commands import hostfile_commands

            commands = hostfile_commands(hosts, job.config, job.accelerator.name, dict(os.environ), cwd)
            if not dry_run:
                from launcher.head.supervise import check_runner_found, make_room_for

                check_runner_found(commands, hosts.runner)
                make_room_for(commands)
        else:
            commands = None
            if not dry_run:
                check_ports(job.plan)
        pid_file = save_pid() if peers.save_pid and not dry_run else None
    except LaunchError as exc:
        fail_with("accel-launch", exc)
    for note in job.notes:
        click.echo(f"accel-launch: note: {escaped_lines(note)}", err=True)
    if dry_run:
        click.echo("accel-launch plan (dry run: nothing started)")
        rows = plan_rows(job, os.environ)
        if commands is not None:
            from launcher.head.commands import describe_commands, node_job, sent_env
            from launcher.job.build_job import nodes_path

            path = nodes_path(node_job(job.config, hosts.selected_nodes()), dict(os.environ))
            secrets = [value for value in (job.config.job_env.get(COMPILE_SECRET_VAR),
                                           os.environ.get(COMPILE_SECRET_VAR)) if value]
            sent = list(sent_env(hosts, job.accelerator.name, dict(os.environ), cwd))
            rows = [*rows, ("launch path", path), *describe_commands(commands, sent, secrets)]
        click.echo(format_plan(rows))
        return
    if commands is not None:
        from launcher.head.supervise import supervise

        status, message = supervise(commands, job.config.settings.grace_period)
        if message:
            click.echo(f"accel-launch: {escaped_lines(message)}", err=True)
        remove_pid_file(pid_file)
        sys.exit(status)
    _run(job, stop_on_stdin_eof=False, pid_file=pid_file)


def run_node_job() -> None:
    """A node launcher that a hostfile launch's head started: the job comes as data
    (launcher.job.node_job), and this node only places it on itself."""
    from launcher.contract.names import HEAD_VARS, STOP_ON_STDIN_EOF
    from launcher.job.build_job import place_node_job
    from launcher.job.node_job import read_node_job

    try:
        node_job = read_node_job(os.environ)
        for name in HEAD_VARS:  # read once; never passed on to the ranks
            os.environ.pop(name, None)
        job = place_node_job(node_job, dict(os.environ), working_directory())
    except LaunchError as exc:
        fail_with("accel-launch", exc)
    _configure_logging(job.config.settings.verbose, job.config.settings.quiet)
    _run(job, stop_on_stdin_eof=STOP_ON_STDIN_EOF in sys.argv[1:])


def _pack(kind: type[_Packed], flags: dict[str, Any], **known: Any) -> _Packed:
    """`kind` from `known` and the click values named as its other fields, which are taken out of `flags`."""
    return kind(**known, **{item.name: flags.pop(item.name) for item in fields(kind) if item.name not in known})


def _run(job: PreparedJob, stop_on_stdin_eof: bool, pid_file: Path | None = None) -> None:
    """Start this node's ranks, say how the job ended, and exit with its status (`pid_file` removed first)."""
    config, plan = job.config, job.plan
    engine = plan.engine_reason is not None
    limit = (open_files_problem(plan.local_world_size) or file_size_problem()
             or (address_space_problem() if engine else None))
    if limit is not None:
        remove_pid_file(pid_file)
        fail("accel-launch", limit, VALIDATION_STATUS)
    if engine and config.settings.engine.logs_specs != DEFAULT_LOGS_SPECS:
        from launcher.run.engine.engine_run import logs_specs_class

        try:
            logs_specs_class(config.settings.engine.logs_specs)  # the plugin is the user's code: before the banner
        except LaunchError as exc:
            remove_pid_file(pid_file)
            fail_with("accel-launch", exc)
    logging.getLogger(__name__).info("plan:\n%s", format_plan(plan_rows(job, os.environ)))
    nodes = "" if config.nnodes == "1" else f" (node {plan.node_rank} of {config.nnodes})"
    if not config.settings.quiet:
        click.echo(
            f"accel-launch: {plan.local_world_size} rank(s){nodes} on {plan.accelerator}, "
            f"compile backend {one_line(config.backend.describe())}",  # one line, as --dry-run shows it
            err=True,
        )
    if engine:  # torch elastic's agent starts the ranks; else the launcher does, without torch in this process
        from launcher.run.engine.engine_run import run_engine as run_job, silence_engine_logs

        if not config.settings.verbose:
            silence_engine_logs()
    else:
        from launcher.run.direct_run import run_direct as run_job
    if stop_on_stdin_eof:
        _stop_when_stdin_closes()
    from launcher.run.failure.rank_failure import hand_on_root_cause

    own_error_file = os.environ.get(ERROR_FILE_VAR)  # a parent's, for this launcher: read before the job starts
    outcome = run_job(plan)
    if outcome.message:
        click.echo(f"accel-launch: {escaped_lines(outcome.message)}", err=True)
    problem = hand_on_root_cause(own_error_file, outcome.status, outcome.message, outcome.failure)
    if problem is not None:
        click.echo(f"accel-launch: note: {escaped_lines(problem)}", err=True)
    remove_pid_file(pid_file)
    _exit_now(outcome.status)


def _given() -> set[str]:
    """The parameters the user set (on the command line or through a PET_* variable), not defaulted."""
    ctx = click.get_current_context()
    defaulted = (None, click.core.ParameterSource.DEFAULT)
    return {param.name for param in ctx.command.params if ctx.get_parameter_source(param.name) not in defaulted}


def _exit_now(status: int) -> None:
    """Exit once the job is over and swept: without waiting on the engine's leftover threads (a rendezvous
    or log-tail thread could keep the interpreter from ending) or on the collector's walk of torch."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _stop_when_stdin_closes() -> None:
    """A node launcher started over ssh: when stdin (the head's ssh connection) closes, send this launcher
    SIGTERM, which stops its ranks."""

    def watch() -> None:
        # os.read on the raw descriptor: a buffered read would hold sys.stdin's lock at interpreter exit.
        while os.read(0, 65536):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    start_thread(threading.Thread(target=watch, name="stdin-watch", daemon=True))


def _configure_logging(verbose: bool, quiet: bool = False) -> None:
    level = logging.INFO if verbose else logging.ERROR if quiet else logging.WARNING
    logging.basicConfig(format="%(name)s: %(message)s", level=level)


PID_FOLDER = Path("/tmp")  # DeepSpeed's PID_FILE_BASEPATH


def save_pid() -> Path:
    """Write this process's pid to a new `/tmp/<pid>.deepspeed`; FlagConflictError when it cannot."""
    path = PID_FOLDER / f"{os.getpid()}.deepspeed"
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise FlagConflictError("--save_pid", f"cannot create {path}: {exc.strerror}") from None
    with os.fdopen(handle, "w") as stream:
        stream.write(str(os.getpid()))
    return path


def remove_pid_file(path: Path | None) -> None:
    """Remove the file `save_pid` wrote (None: there is none)."""
    if path is not None:
        path.unlink(missing_ok=True)
