"""A node launcher started over ssh stops its ranks when the head's ssh client goes away."""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["stop_when_stdin_closes"]


def stop_when_stdin_closes() -> None:
    """When stdin (the head's ssh connection) closes, send this launcher SIGTERM: its ranks are stopped."""

    def watch() -> None:
        # os.read on the raw descriptor: a buffered read would hold sys.stdin's lock at interpreter exit.
        while os.read(0, 65536):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()
