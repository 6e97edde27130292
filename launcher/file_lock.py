"""A flock taken within a bound: every lock between a node's processes (the backend list's cache, a compiled graph's
node lock) waits this way, never without end."""

from __future__ import annotations

import fcntl
import logging
import time

__all__ = ["lock_within"]

logger = logging.getLogger(__name__)
_POLL_SECONDS = 0.05


def lock_within(fd: int, seconds: float) -> bool:
    """Take an exclusive flock on `fd`, trying until `seconds` have passed (0: once); False when it could not be
    had."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_POLL_SECONDS, left))
        except OSError as exc:  # ENOLCK, a file system without locks: go on without one
            logger.debug("the lock could not be taken: %s", exc)
            return False
