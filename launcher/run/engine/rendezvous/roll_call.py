"""Who came to a c10d rendezvous: every node launcher notes itself in the rendezvous store before it waits,
so that one that gives up after `--rdzv-timeout` can say, in one line, who came and how many never did. What
the others noted is untrusted (docs/RELIABILITY.md, "Nothing another node writes is trusted"): its first MiB
taken, any bytes, each name escaped and shortened, and only the first few named.

Imports torch (through the store it is given): only on the path that starts the elastic agent.
"""

from __future__ import annotations

from datetime import timedelta

from torch.distributed import Store

from launcher.escaped import short_line

__all__ = ["RollCall"]

_KEY = "accel/arrived/{}"
_READ_TIMEOUT = timedelta(seconds=5)
_MAX_READ_BYTES = 1 << 20
_MAX_NAMED = 16


class RollCall:
    """The roll call of rendezvous `run_id` in `store`; `me` is how this node is named there, and the
    wait is for `min_nodes` at `endpoint` for `seconds` (`--rdzv-timeout`)."""

    def __init__(self, store: Store, run_id: str, me: str, endpoint: str, min_nodes: int, seconds: float) -> None:
        self._store, self._key, self._me = store, _KEY.format(run_id), me
        self._endpoint, self._min_nodes, self._seconds = endpoint, min_nodes, seconds

    def note(self) -> None:
        """Add this node to the list (before it waits for the others)."""
        self._store.append(self._key, f"{self._me}\n")

    def came(self) -> list[str] | None:
        """The nodes noted so far, in order of arrival, or None when the store cannot be read."""
        try:
            self._store.set_timeout(_READ_TIMEOUT)
            text = self._store.get(self._key)[:_MAX_READ_BYTES].decode("utf-8", errors="replace")
        except RuntimeError:  # DistStoreError included: the store is gone
            return None
        return list(dict.fromkeys(line for line in text.split("\n") if line))

    def timeout_message(self) -> str:
        """One line: the wait that ran out, who came, and how many never did."""
        came = self.came()
        waited = f"the nodes did not all come to {self._endpoint} within --rdzv-timeout {self._seconds:g} s"
        if came is None:
            return f"{waited}; this node was {self._me}"
        missing = max(self._min_nodes - len(came), 0)
        named = ", ".join(short_line(name) for name in came[:_MAX_NAMED])
        more = f" and {len(came) - _MAX_NAMED} more" if len(came) > _MAX_NAMED else ""
        return f"{waited}: {len(came)} of {self._min_nodes} came ({named}{more}); {missing} never did"
