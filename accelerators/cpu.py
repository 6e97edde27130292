"""The CPU: always there; as many ranks as you like, one per core by default."""

from __future__ import annotations

import os

from accelerators.accelerator import Accelerator


class CPUAccelerator(Accelerator):
    """Plain CPU processes, talking over gloo."""

    name = "cpu"
    default_compile_backend = "inductor"
    communication_backend = "gloo"
    visible_devices_env = None
    nproc_word = "cpu"

    @classmethod
    def is_available(cls) -> bool:
        """Always True: every machine has a CPU."""
        return True

    @classmethod
    def device_count(cls) -> int:
        """The number of logical CPUs."""
        return os.cpu_count() or 1

    @classmethod
    def max_ranks_per_node(cls) -> int | None:
        """No limit: CPU ranks may oversubscribe the cores."""
        return None

    @classmethod
    def default_nproc(cls) -> int:
        """One rank per logical CPU."""
        return os.cpu_count() or 1

    @classmethod
    def word_nproc(cls) -> int:
        """One rank per CPU this process may run on (its affinity), for `--nproc-per-node cpu`."""
        return len(os.sched_getaffinity(0))
