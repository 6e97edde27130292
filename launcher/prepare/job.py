"""The launch pipeline, click-free: options -> environment -> backend -> config -> plan or run."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from accelerators import AcceleratorUnavailableError, UnknownAcceleratorError, accelerator_class
from launcher.resolve.node_facts import AcceleratorFacts, accelerator_facts
from launcher.resolve.node_check import check_backend
from launcher.prepare.config import JobConfig, Program
from launcher.prepare.cpu_binding import binding_env, parse_core_list, split_cores
from launcher.resolve.ds_config import find_ds_config
from launcher.prepare.engine_options import EngineOptions
from launcher.resolve.envfile import default_env_file, read_env_file
from launcher.errors import AcceleratorChoiceError, ScriptNotFoundError, UsageError
from launcher.prepare.local_slots import LocalSelection
from launcher.multinode.node.addresses import Placement, place_node
from launcher.multinode.node.identity import NodeIdentity, node_identity
from launcher.prepare.plan import DEFAULT_MASTER_PORT
from launcher.prepare.ports import ensure_port_free
from launcher.run.rank_env import ACCELERATOR_VAR, job_environment, physical_cores
from launcher.resolve.backend import ResolvedBackend, resolve_backend

__all__ = ["LaunchOptions", "PreparedJob", "prepare_job", "check_ports"]

# torchrun's device words for --nproc-per-node, and the accelerator each counts.
_DEVICE_KINDS = {"gpu": "cuda", "xpu": "xpu", "cpu": "cpu"}


@dataclass(frozen=True)
class LaunchOptions:
    """The command line, as plain values."""

    program: Program
    compile_backend: str | None = None
    accelerator: str | None = None
    ds_config: str | None = None
    nproc_per_node: str = "1"
    nnodes: str = "1"
    node_rank: int | None = None
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    rdzv_backend: str = "c10d"
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    rdzv_timeout: int = 900
    max_restarts: int = 0
    env_file: str | None = None
    log_dir: str | None = None
    grace_period: float = 5.0
    timeout: float | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    compile_backend_source: str | None = None
    engine: EngineOptions = field(default_factory=EngineOptions)
    local_selection: LocalSelection | None = None
    bind_cores: str | None = None


@dataclass(frozen=True)
class PreparedJob:
    """A launch that passed every check: the config, how the accelerator was chosen, and notes for the user."""

    config: JobConfig
    detected_by: str
    notes: tuple[str, ...] = ()


def prepare_job(options: LaunchOptions, environ: dict[str, str], cwd: Path) -> PreparedJob:
    """Every check that can fail before a rank starts; raises LaunchError (or ValueError) with one message."""
    _check_program(options.program, cwd)
    env_path = _env_file_path(options.env_file, cwd)
    file_values = read_env_file(env_path) if env_path is not None else {}
    job_environ = {**file_values, **environ}
    if options.accelerator is not None:
        job_environ[ACCELERATOR_VAR] = options.accelerator
    try:
        accelerator = accelerator_facts(job_environ)
    except (UnknownAcceleratorError, AcceleratorUnavailableError) as exc:
        raise AcceleratorChoiceError(str(exc), _accelerator_source(options, environ, env_path)) from None
    ds_ref = find_ds_config(options.ds_config, options.program.args)
    backend = resolve_backend(
        options.compile_backend, environ, file_values, ds_ref, lambda: accelerator.default_backend
    )
    if options.compile_backend_source and backend.source == "--compile-backend":
        # A node launcher started by a hostfile launch: keep the source the head resolved it from.
        backend = replace(backend, source=options.compile_backend_source)
    check_backend(backend, accelerator)
    identity = node_identity(job_environ)
    node = identity.node if identity is not None else None
    devices_env = accelerator_class(accelerator.name).visible_devices_env
    slots = node.slots if node is not None else _local_slots(options.local_selection, accelerator, devices_env)
    nproc = len(slots) if slots is not None else _nproc(options.nproc_per_node, accelerator)
    layout = _layout(options, identity)
    placement = _placement(options, identity, layout, job_environ)
    devices = {devices_env: ",".join(map(str, slots))} if slots is not None and devices_env else {}
    notes = () if node is not None or slots is None or devices_env else (
        f"{accelerator.name} has no devices to choose from: the device flags start {nproc} rank(s)",)
    config = JobConfig(
        program=options.program,
        backend=backend,
        accelerator=accelerator.name,
        nproc_per_node=nproc,
        nnodes=layout["nnodes"],
        node_rank=layout["node_rank"],
        master_addr=options.master_addr,
        master_port=options.master_port,
        rdzv_backend=options.rdzv_backend,
        rdzv_endpoint=layout["rdzv_endpoint"],
        rdzv_id=options.rdzv_id or (identity.job_id if identity is not None and identity.job_id else ""),
        rdzv_timeout=options.rdzv_timeout,
        max_restarts=options.max_restarts,
        grace_period=options.grace_period,
        timeout=options.timeout,
        log_dir=options.log_dir,
        engine=options.engine,
        node_addr=placement.node_addr if placement else None,
        hosts_store=placement.hosts_store if placement else None,
        job_env={
            **{k: v for k, v in file_values.items() if k not in environ},
            **options.extra_env,
            **devices,
            **(placement.rank_env if placement else {}),
            **_job_env(backend, accelerator.name, nproc, job_environ),
            **_binding(options.bind_cores, nproc, job_environ),
        },
    )
    return PreparedJob(config, accelerator.detected_by, notes)


def _layout(options: LaunchOptions, identity: NodeIdentity | None) -> dict:
    """nnodes, node rank and endpoint: the flags, else what a runner (Slurm, OpenMPI, pdsh) says."""
    nnodes, endpoint = options.nnodes, options.rdzv_endpoint
    if identity is not None and options.nnodes == "1":
        nnodes = str(identity.nnodes)
    if identity is not None and identity.master_addr and not endpoint:
        # The engine's first node, never --master-addr's default 127.0.0.1; --master-port only sets the port.
        endpoint = f"{identity.master_addr}:{options.master_port or DEFAULT_MASTER_PORT}"
    if options.node_rank is not None:
        node_rank = options.node_rank
    else:
        node_rank = identity.node_rank if identity is not None else 0
    return {"nnodes": nnodes, "node_rank": node_rank, "rdzv_endpoint": endpoint}


def _placement(options: LaunchOptions, identity: NodeIdentity | None, layout: dict,
               environ: dict[str, str]) -> Placement | None:
    """Multi-node: this node's side of the rendezvous (launcher.multinode.node.addresses); None on one node."""
    if layout["nnodes"] == "1":
        return None
    endpoint = layout["rdzv_endpoint"] or f"{options.master_addr}:{options.master_port or DEFAULT_MASTER_PORT}"
    return place_node(identity.host if identity else None, endpoint, environ)


def check_ports(config: JobConfig) -> None:
    """The node that hosts the store needs the named port free; say so before starting anything."""
    if config.master_port is not None and config.node_rank == 0 and not config.rdzv_endpoint:
        ensure_port_free(config.master_addr, config.master_port)


def _check_program(program: Program, cwd: Path) -> None:
    if program.mode == "script":
        path = cwd / program.target
        if not path.exists():
            raise ScriptNotFoundError(program.target, "no such file")
        if path.is_dir():
            raise ScriptNotFoundError(program.target, "is a directory; give the script file inside it, or use -m")
        if not os.access(path, os.R_OK):
            raise ScriptNotFoundError(program.target, "permission denied")
    elif program.mode == "exec" and shutil.which(program.target) is None:
        raise ScriptNotFoundError(program.target, "no such program on PATH (--no-python runs it directly)")


def _env_file_path(env_file: str | None, cwd: Path) -> Path | None:
    return Path(env_file) if env_file is not None else default_env_file(cwd)


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


def _nproc(value: str, accelerator: AcceleratorFacts) -> int:
    if value == "auto":
        return accelerator.default_nproc
    if value in _DEVICE_KINDS:
        return _count_of(value)
    try:
        nproc = int(value)
    except ValueError:
        raise UsageError("--nproc-per-node", value, "expected a whole number, auto, gpu, xpu or cpu") from None
    if nproc < 1:
        raise UsageError("--nproc-per-node", value, "must be at least 1")
    limit = accelerator.max_ranks_per_node
    if limit is not None and nproc > limit:
        raise UsageError(
            "--nproc-per-node", value, f"{accelerator.name} has {limit} device{'s' if limit != 1 else ''} here"
        )
    return nproc


def _count_of(kind: str) -> int:
    """torchrun's --nproc-per-node gpu|xpu (that device's count; an error where there is none) or cpu."""
    if kind == "cpu":
        return len(os.sched_getaffinity(0))
    cls = accelerator_class(_DEVICE_KINDS[kind])
    if not cls.is_available():
        raise UsageError("--nproc-per-node", kind, f"{cls.name} is not available here: {cls.unavailable_reason()}")
    return cls.device_count()


def _job_env(backend: ResolvedBackend, accelerator: str, nproc: int, environ: dict[str, str]) -> dict[str, str]:
    return job_environment(backend, accelerator, nproc, environ, physical_cores())
