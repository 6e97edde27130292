"""The command every rank runs: the bootstrap, then the user's program."""

from __future__ import annotations

import sys

from launcher.contract.job import JobConfig

__all__ = ["rank_command"]


def rank_command(config: JobConfig) -> list[str]:
    """The argv each rank runs: the bootstrap (`-P`: not found in the user's folder), then the user's program."""
    program = config.program
    return [sys.executable, "-P", "-m", "launcher.rank.bootstrap", program.mode, program.target, *program.args]
