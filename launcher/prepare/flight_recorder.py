"""NCCL's flight recorder, wired as torch offers it, for a job whose ranks talk over NCCL (cuda, ROCm's RCCL under the
same name; docs/ACCELERATORS.md): each rank keeps a ring
of its last collectives and, when its NCCL watchdog times out, dumps it to a file of its own (one per rank, the
prefix + its rank), which torch's `torch.distributed.flight_recorder` reads. The launcher sets torch's variables
where they are unset, under either of the names torch reads; the user's values win, and `--dry-run` shows them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

__all__ = ["flight_recorder_environment", "TRACE_FILE_PREFIX"]

NCCL = "nccl"
TRACE_FILE_PREFIX = "nccl_trace_rank_"  # torch's own default, in its default folder /tmp

# (the variable set, the other names torch reads for the same setting, its value)
_SETTINGS = (
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", ("TORCH_FR_BUFFER_SIZE",), "2000"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", (), "1"),
)
_DUMP_FILE = ("TORCH_FR_DUMP_TEMP_FILE", ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE",))


def flight_recorder_environment(communication_backend: str, log_dir: str | None,
                                environ: Mapping[str, str]) -> dict[str, str]:
    """What the ranks of a job on NCCL get beyond `environ` (the user's): the ring's size, the dump on a watchdog
    timeout, and where the dumps go (--log-dir, else the temp dir). Nothing for another communication backend."""
    if communication_backend != NCCL:
        return {}
    folder = os.path.abspath(log_dir) if log_dir else tempfile.gettempdir()
    wanted = (*_SETTINGS, (*_DUMP_FILE, os.path.join(folder, TRACE_FILE_PREFIX)))
    return {name: value for name, others, value in wanted if not any(known in environ for known in (name, *others))}
