"""The launch pipeline, click-free: options -> environment -> backend -> one JobConfig, placed on this node as
its NodePlan (launcher/node/node_plan.py).

A hostfile launch's head prepares the job once and places it nowhere; each node it starts only places that job on
itself (`place_node_job`): its accelerator is checked against the backend, never resolved again. Placing a job
decides its rendezvous and its launch path, once: ACCEL_LAUNCH_PATH and torch elastic's service variables are read
there, and nothing later reads them again.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, replace
from pathlib import Path

from accelerators import AcceleratorUnavailableError, UnknownAcceleratorError
from launcher.contract.job_config import JobConfig, NodePlan
from launcher.contract.names import ACCELERATOR_VAR, COMPILE_CACHE_VAR, DEFAULT_MASTER_PORT, NODE_HOSTS_VAR
from launcher.contract.rdzv_conf import OWN_KEYS, check_read_values, unread_key_note
from launcher.errors import AcceleratorChoiceError, NodeIdentityError, PortBusyError
from launcher.job.backend_order import find_ds_config, resolve_backend
from launcher.job.compile_keep import keep_environment
from launcher.job.envfile import default_env_file, read_env_file
from launcher.job.local_slots import LocalSelection, ranks_per_node
from launcher.job.options import LaunchOptions
from launcher.job.rank_defaults import check_compile_variables, compile_environment
from launcher.job.validate import check_program
from launcher.node.identity import NodeIdentity, node_identity
from launcher.node.node_check import AcceleratorFacts, accelerator_facts, check_backend
from launcher.node.node_plan import plan_node
from launcher.node.path_choice import asked_path, engine_reason, path_text
from launcher.node.rendezvous_choice import meeting_point

__all__ = ["PreparedJob", "prepare_job", "resolve_job", "place_node_job", "nodes_path", "check_ports"]


@dataclass(frozen=True)
class PreparedJob:
    """A launch that passed every check: the job, its plan on this node (None: a hostfile launch's head, which
    places it nowhere), this node's accelerator, the env file read (if any), and notes for the user."""

    config: JobConfig
    plan: NodePlan | None
    accelerator: AcceleratorFacts
    env_file: Path | None = None
    notes: tuple[str, ...] = ()

    @property
    def detected_by(self) -> str:
        """How this node's accelerator was chosen."""
        return self.accelerator.detected_by


def prepare_job(options: LaunchOptions, environ: dict[str, str], cwd: Path, place: bool = True) -> PreparedJob:
    """Every check that can fail before a rank starts; raises LaunchError (or ValueError) with one message.

    `place=False`: the head of a hostfile launch, which starts no rank itself; each node places the job."""
    job = resolve_job(options, environ, cwd, place)
    check_backend(job.config.backend, job.accelerator, options.program.import_folder(cwd))
    return job


def resolve_job(options: LaunchOptions, environ: dict[str, str], cwd: Path, place: bool = True) -> PreparedJob:
    """The job these options give (placed on this node unless `place` is False), its backend not yet checked
    against the accelerator (the report shows what a launch would resolve, accepted or not)."""
    env_path = Path(options.env_file) if options.env_file is not None else default_env_file(cwd)
    file_values = read_env_file(env_path, named=options.env_file is not None) if env_path is not None else {}
    job_environ = {**file_values, **environ}
    check_compile_variables(environ, file_values, env_path)  # before the facts: listing the backends imports torch
    accelerator = _accelerator(job_environ, options.accelerator, _accelerator_source(options, environ, env_path))
    ds_ref = find_ds_config(options.ds_config, options.program.args)
    backend = resolve_backend(options.compile_backend, environ, file_values, ds_ref,
                              lambda: accelerator.default_backend, str(env_path))
    identity = node_identity(job_environ)
    node = identity.node if identity is not None else None
    devices_env = accelerator.device.visible_devices_env
    slots = node.slots if node is not None else _local_slots(options.local_selection, accelerator, devices_env)
    nnodes, node_rank, endpoint, known = _layout(options, identity)
    nproc = len(slots) if slots is not None else ranks_per_node(options.nproc_per_node, accelerator)
    # Every node runs this same command line under Slurm or OpenMPI: a number of ranks is the same on each.
    uniform = known and slots is None and options.nproc_per_node.isdigit()
    config = JobConfig(
        program=options.program,
        backend=backend,
        accelerator_choice=job_environ.get(ACCELERATOR_VAR) or None,
        nproc_per_node=nproc,
        settings=options.settings,
        nnodes=nnodes,
        rdzv_endpoint=endpoint,
        node_rank_known=known,
        rank_counts=((int(nnodes), nproc),) if uniform else (),
        rdzv_id=options.rdzv_id or (identity.job_id if identity is not None and identity.job_id else ""),
        job_env={**{k: v for k, v in file_values.items() if k not in environ}, **options.extra_env},
    )
    config.check_node_rank(node_rank)
    compiling = compile_environment(options.settings.compile_cache, job_environ, config, cwd)
    kept, notes = keep_environment(compiling[COMPILE_CACHE_VAR], options.settings.compile_cache_dir, job_environ,
                                   config, own_node=place)
    config = replace(config, job_env={**config.job_env, **compiling, **kept})
    notes += () if node is not None or slots is None or devices_env else (
        f"{accelerator.name} has no devices to choose from: the device flags start {config.nproc_per_node} rank(s)",)
    plan = None
    if place:
        plan = plan_node(config, accelerator.name, node_rank, environ, slots=slots,
                         own_host=identity.host if identity is not None else None, job_environ=job_environ)
    else:
        asked_path(environ)  # the head places nothing, but refuses a bad ACCEL_LAUNCH_PATH before anything starts
    check_read_values(options.settings.engine.rdzv_conf, meeting_point(config)[0])
    unread = unread_key_note(options.settings.engine.rdzv_conf) if options.settings.rdzv_backend in OWN_KEYS else None
    notes += (unread,) if unread is not None else ()
    return PreparedJob(config, plan, accelerator, env_path, notes)


def place_node_job(job: JobConfig, environ: dict[str, str], cwd: Path) -> PreparedJob:
    """A job its head prepared, placed on this node: the program is here, this node's accelerator accepts
    the backend, and the node table gives this node's rank and devices."""
    check_program(job.program, cwd)
    job_environ = {**job.job_env, **environ}
    accelerator = _accelerator(job_environ, job.accelerator_choice,
                               f"the accelerator the head chose ({job.accelerator_choice})")
    check_backend(job.backend, accelerator, job.program.import_folder(cwd))
    identity = node_identity(job_environ)
    if identity is None or identity.node is None:
        raise NodeIdentityError(NODE_HOSTS_VAR, environ.get(NODE_HOSTS_VAR, ""), "a node launcher needs the node "
                                "table its head sends (start it with accel-launch --hostfile)")
    counted = job.ranks_on(identity.node_rank)
    if counted is not None and counted != len(identity.node.slots):
        raise NodeIdentityError(NODE_HOSTS_VAR, identity.node.host, f"gives node {identity.node_rank} "
                                f"{len(identity.node.slots)} rank(s), but its head counted {counted}")
    plan = plan_node(job, accelerator.name, identity.node_rank, environ, slots=identity.node.slots,
                     own_host=identity.host, job_environ=job_environ)
    return PreparedJob(job, plan, accelerator)


def nodes_path(job: JobConfig, environ: dict[str, str]) -> str:
    """The `launch path` row of a hostfile launch's plan: what every node decides where it places `job`, the job
    its head sends it, with the head's environment (which sends ACCEL_LAUNCH_PATH to every node)."""
    return path_text(job, engine_reason(job, meeting_point(job)[0], environ))


def _accelerator(job_environ: dict[str, str], choice: str | None, source: str) -> AcceleratorFacts:
    """This node's accelerator (`choice` when one was given, written into `job_environ`), or one line
    naming where an unusable choice came from."""
    if choice is not None:
        job_environ[ACCELERATOR_VAR] = choice
    try:
        return accelerator_facts(job_environ)
    except (UnknownAcceleratorError, AcceleratorUnavailableError) as exc:
        raise AcceleratorChoiceError(str(exc), source) from None


def _layout(options: LaunchOptions, identity: NodeIdentity | None) -> tuple[str, int, str, bool]:
    """nnodes, node rank, endpoint, and whether the runner (Slurm, OpenMPI, pdsh) said both this node's rank and
    the first node's address: the flags, else what the runner says."""
    nnodes, endpoint, known = options.nnodes, options.rdzv_endpoint, False
    if identity is not None and options.nnodes == "1":
        nnodes = str(identity.nnodes)
    if identity is not None and identity.master_addr and not endpoint:
        # The engine's first node, never --master-addr's default 127.0.0.1; --master-port only sets the port.
        endpoint = f"{identity.master_addr}:{options.settings.master_port or DEFAULT_MASTER_PORT}"
        known = options.node_rank is None and nnodes == str(identity.nnodes) and identity.nnodes > 1
    if options.node_rank is not None:
        node_rank = options.node_rank
    else:
        node_rank = identity.node_rank if identity is not None else 0
    return nnodes, node_rank, endpoint, known


def check_ports(plan: NodePlan) -> None:
    """The node that hosts the store needs the named port free; say so before starting anything."""
    settings = plan.job.settings
    if settings.master_port is not None and plan.node_rank == 0 and not plan.job.rdzv_endpoint:
        _ensure_port_free(settings.master_addr, settings.master_port)


def _ensure_port_free(host: str, port: int) -> None:
    """Raise PortBusyError naming host and port when nothing can listen on it here."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as exc:
            raise PortBusyError(host, port, exc.strerror or str(exc)) from None


def _accelerator_source(options: LaunchOptions, environ: dict[str, str], env_path: Path | None) -> str:
    """Where the accelerator's name came from, for an error about it."""
    if options.accelerator is not None:
        return "--accelerator"
    if ACCELERATOR_VAR in environ or env_path is None:
        return ACCELERATOR_VAR
    return f"{ACCELERATOR_VAR} in {env_path}"


def _local_slots(selection: LocalSelection | None, accelerator: AcceleratorFacts,
                 devices_env: str | None) -> tuple[int, ...] | None:
    """DeepSpeed's device flags without a hostfile: the chosen devices (on cpu, only their count matters)."""
    if selection is None:
        return None
    pool = accelerator.device_count if devices_env else max(accelerator.default_nproc, selection.highest_slot() + 1)
    return selection.slots(pool)
