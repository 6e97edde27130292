"""The launch pipeline, click-free: options -> environment -> backend -> one JobConfig, placed on this node.

A hostfile launch's head prepares the job once; each node it starts only places that job on itself
(`place_node_job`): its accelerator is checked against the backend, never resolved again. Placing a job decides
its rendezvous and its launch path, once (`JobConfig.rendezvous`, `JobConfig.engine_reason`): ACCEL_LAUNCH_PATH and
torch elastic's service variables are read there, and nothing later reads them again.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path

from accelerators import AcceleratorUnavailableError, UnknownAcceleratorError, accelerator_class
from launcher.contract.job_config import JobConfig
from launcher.contract.names import ACCELERATOR_VAR, CPU_BINDING_VAR, DEFAULT_MASTER_PORT, NODE_HOSTS_VAR
from launcher.contract.rdzv_conf import OWN_KEYS, check_read_values, unread_key_note
from launcher.errors import AcceleratorChoiceError, NodeIdentityError, PortBusyError
from launcher.multinode.node.addresses import place_node
from launcher.multinode.node.identity import NodeIdentity, node_identity
from launcher.prepare.core_split import binding_env, check_binding_env, parse_core_list, split_cores
from launcher.prepare.local_slots import LocalSelection, ranks_per_node
from launcher.prepare.options import LaunchOptions
from launcher.prepare.rank_defaults import compile_environment, flight_recorder_environment
from launcher.prepare.validate import check_program
from launcher.resolve.backend_order import find_ds_config, resolve_backend
from launcher.resolve.envfile import default_env_file, read_env_file
from launcher.resolve.node_check import AcceleratorFacts, accelerator_facts, check_backend
from launcher.run.direct.path_choice import asked_path, engine_reason, path_text
from launcher.run.rank_start import check_virtual_devices, node_environment, physical_cores
from launcher.run.rendezvous.choice import AGREEMENT_PREFIX, rendezvous

__all__ = ["PreparedJob", "prepare_job", "resolve_job", "place_node_job", "nodes_path", "check_ports"]


@dataclass(frozen=True)
class PreparedJob:
    """A launch that passed every check: the config, this node's accelerator, the env file read (if any),
    and notes for the user."""

    config: JobConfig
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
        accelerator=accelerator.name,
        accelerator_choice=job_environ.get(ACCELERATOR_VAR) or None,
        nproc_per_node=nproc,
        settings=options.settings,
        nnodes=nnodes,
        node_rank=node_rank,
        rdzv_endpoint=endpoint,
        node_rank_known=known,
        rank_counts=((int(nnodes), nproc),) if uniform else (),
        rdzv_id=options.rdzv_id or (identity.job_id if identity is not None and identity.job_id else ""),
        job_env={**{k: v for k, v in file_values.items() if k not in environ}, **options.extra_env},
    )
    config = replace(config, job_env={**config.job_env, **compile_environment(
        options.settings.compile_cache, job_environ, config, cwd)})
    notes = () if node is not None or slots is None or devices_env else (
        f"{accelerator.name} has no devices to choose from: the device flags start {config.nproc_per_node} rank(s)",)
    if place:
        config = _decided(_on_this_node(config, identity.host if identity is not None else None, slots, job_environ),
                          environ)
    else:
        asked_path(environ)  # the head places nothing, but refuses a bad ACCEL_LAUNCH_PATH before anything starts
    meeting = config.rendezvous or rendezvous(config)  # the head's: each node decides its own where it places the job
    check_read_values(options.settings.engine.rdzv_conf, meeting.backend.removeprefix(AGREEMENT_PREFIX))
    unread = unread_key_note(options.settings.engine.rdzv_conf) if options.settings.rdzv_backend in OWN_KEYS else None
    notes += (unread,) if unread is not None else ()
    return PreparedJob(config, accelerator, env_path, notes)


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
    config = replace(job, accelerator=accelerator.name, nproc_per_node=len(identity.node.slots),
                     node_rank=identity.node_rank)
    return PreparedJob(_decided(_on_this_node(config, identity.host, identity.node.slots, job_environ), environ),
                       accelerator)


def nodes_path(job: JobConfig, environ: dict[str, str]) -> str:
    """The `launch path` row of a hostfile launch's plan: what every node decides where it places `job`, the job
    its head sends it, with the head's environment (which sends ACCEL_LAUNCH_PATH to every node)."""
    return path_text(_decided(job, environ))


def _decided(config: JobConfig, environ: dict[str, str]) -> JobConfig:
    """The placed config with its rendezvous and launch path, decided once here (`environ`: this process's own,
    which holds ACCEL_LAUNCH_PATH and torch elastic's service variables)."""
    meeting = rendezvous(config)
    return replace(config, rendezvous=meeting, engine_reason=engine_reason(config, meeting, environ))


def _accelerator(job_environ: dict[str, str], choice: str | None, source: str) -> AcceleratorFacts:
    """This node's accelerator (`choice` when one was given, written into `job_environ`), or one line
    naming where an unusable choice came from."""
    if choice is not None:
        job_environ[ACCELERATOR_VAR] = choice
    try:
        return accelerator_facts(job_environ)
    except (UnknownAcceleratorError, AcceleratorUnavailableError) as exc:
        raise AcceleratorChoiceError(str(exc), source) from None


def _on_this_node(config: JobConfig, own_host: str | None, slots: tuple[int, ...] | None,
                  environ: dict[str, str]) -> JobConfig:
    """The config with this node's own part: devices, threads, cores, and its side of the rendezvous."""
    device = accelerator_class(config.accelerator)
    devices_env = device.visible_devices_env
    devices = {devices_env: ",".join(map(str, slots))} if slots is not None and devices_env else {}
    placement = None
    if config.nnodes != "1":
        settings = config.settings
        endpoint = config.rdzv_endpoint or f"{settings.master_addr}:{settings.master_port or DEFAULT_MASTER_PORT}"
        placement = place_node(own_host, endpoint, environ)
    if config.settings.bind_cores is None:  # no binding flag: the ranks would inherit the user's own binding
        check_binding_env(environ, "the env file" if CPU_BINDING_VAR in config.job_env else "the environment")
    node_env = {
        **devices,
        **(placement.rank_env if placement else {}),
        **node_environment(config.accelerator, config.nproc_per_node, environ, physical_cores()),
        **_binding(config.settings.bind_cores, config.nproc_per_node, environ),
        **flight_recorder_environment(device.communication_backend, config.settings.log_dir, environ),
    }
    placed = replace(config, node_addr=placement.node_addr if placement else None,
                     hosts_store=placement.hosts_store if placement else None, node_env=node_env)
    if config.settings.engine.virtual_local_rank:
        check_virtual_devices(config.nproc_per_node, devices_env, {**environ, **placed.rank_env})
    return placed


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


def check_ports(config: JobConfig) -> None:
    """The node that hosts the store needs the named port free; say so before starting anything."""
    settings = config.settings
    if settings.master_port is not None and config.node_rank == 0 and not config.rdzv_endpoint:
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


def _binding(bind_cores: str | None, nproc: int, environ: dict[str, str]) -> dict[str, str]:
    """--bind_cores_to_rank / --bind_core_list: each local rank's share of the cores, for the ranks."""
    if bind_cores is None:
        return {}
    available = os.sched_getaffinity(0)
    cores = parse_core_list(bind_cores) if bind_cores else tuple(sorted(available))
    return binding_env(split_cores(cores, nproc, available, bind_cores), environ)
