"""The job's copy of a compiled graph, in the job's TCPStore: signed with the job's secret, in chunks, claimed by
the first rank that needs it so that the others wait for its compile instead of compiling too.

A value is loaded only when its HMAC under the job's secret checks: whoever can reach the store's port, and is not
of the job, can plant keys but never a graph that a rank loads (docs/CONTRACT.md section 7). Claims belong to one
attempt of the job (a restart never waits on a claim of ranks that are gone); values serve every attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Any

__all__ = ["JobShare", "CHUNK_BYTES"]

# torch's TCPStore server resets a connection that sends a value over 8 MiB.
CHUNK_BYTES = 4 << 20
_POLL_SECONDS = 0.05
_MAX_CHUNKS = 1024  # 4 GiB: a header claiming more is not of ours


class JobShare:
    """One rank's view of the job's copies: `fetch`, `claim`, `wait_for`, `publish`, `give_up`."""

    def __init__(self, store: Any, secret: bytes, attempt: str, member: str, alive: Callable[[str], bool]) -> None:
        """`member`: this rank as "host pid"; `alive(claimer)`: whether a claimer may still publish."""
        self._store = store
        self._secret = secret
        space = hashlib.sha256(secret).hexdigest()[:16]
        self._values = f"accel-compile/{space}/value/"
        self._claims = f"accel-compile/{space}/{attempt}/claim/"
        self._gone = f"accel-compile/{space}/{attempt}/gave-up/"
        self._me = member
        self._alive = alive

    def fetch(self, key: str) -> bytes | None:
        """The job's signed copy of `key`, checked; None when there is none or it does not check."""
        header_key = self._values + key
        if not self._store.check([header_key]):
            return None
        try:
            count_text, _, mac = self._store.get(header_key).decode("ascii").partition(" ")
            count = int(count_text)
        except (UnicodeDecodeError, ValueError):
            return None
        if not 0 < count <= _MAX_CHUNKS:
            return None
        chunks = [self._values + f"{key}/{index}" for index in range(count)]
        if not self._store.check(chunks):
            return None
        payload = b"".join(bytes(self._store.get(chunk)) for chunk in chunks)
        return payload if hmac.compare_digest(mac, self._mac(key, payload)) else None

    def claim(self, key: str) -> str | None:
        """Claim the compile of `key` for this rank: None when it is ours, else the claimer ("host pid")."""
        held = self._store.compare_set(self._claims + key, "", self._me).decode("utf-8", "replace")
        return None if held == self._me else held

    def wait_for(self, key: str, claimer: str, seconds: float) -> bytes | None:
        """The claimer's copy of `key` once published; None when it gave up, died, or took longer than `seconds`."""
        deadline = time.monotonic() + seconds
        header, gone = self._values + key, self._gone + key
        while time.monotonic() < deadline:
            if self._store.check([header]):
                return self.fetch(key)
            if self._store.check([gone]) or not self._alive(claimer):
                return None
            time.sleep(_POLL_SECONDS)
        return None

    def publish(self, key: str, payload: bytes) -> None:
        """Sign and store `payload` for `key`: the chunks first, then the header that makes them whole."""
        count = max(1, -(-len(payload) // CHUNK_BYTES))
        for index in range(count):
            self._store.set(self._values + f"{key}/{index}", payload[index * CHUNK_BYTES:(index + 1) * CHUNK_BYTES])
        self._store.set(self._values + key, f"{count} {self._mac(key, payload)}")

    def give_up(self, key: str) -> None:
        """Tell the ranks waiting for this rank's compile of `key` that no copy is coming."""
        self._store.set(self._gone + key, "1")

    def _mac(self, key: str, payload: bytes) -> str:
        return hmac.new(self._secret, key.encode() + b"\0" + payload, hashlib.sha256).hexdigest()
