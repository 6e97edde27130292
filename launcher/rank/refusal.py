"""How a rank refuses: one line, handed to the launcher through the engine's error file, and exit status 2 (1 for a
rendezvous that failed)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import NoReturn

from launcher.contract.hosts import this_host
from launcher.contract.names import ERROR_FILE_VAR, REFUSAL_PHRASE, VALIDATION_STATUS
from launcher.shared_files import publish_file

__all__ = ["refuse"]


def refuse(message: str, phrase: str = REFUSAL_PHRASE, status: int = VALIDATION_STATUS) -> NoReturn:
    """Hand the one-line reason to the launcher through the engine's error file, which prints it once; exit
    `status`. `phrase`: what the rank refused (the compile backend, or START_REFUSAL_PHRASE: to run at all), or
    RENDEZVOUS_FAILURE_PHRASE with FAILURE_STATUS."""
    
    rank = os.environ.get("RANK", "?")
    # The host as torchrun's failure table and MASTER_ADDR name it (docs/CONTRACT.md section 4).
    line = f"rank {rank} on {this_host()} {phrase}: {message}"
    error_file = os.environ.get(ERROR_FILE_VAR)
    if error_file:
        # Whole or not at all: a half-written record would be reported as an unreadable error file.
        publish_file(error_file, json.dumps({"message": line, "timestamp": int(time.time())}))
    else:
        print(f"accel-launch: {line}", file=sys.stderr, flush=True)
    sys.exit(status)
