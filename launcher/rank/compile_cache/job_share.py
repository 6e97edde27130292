"""The job's copy of a compiled graph, in the job's TCPStore: signed with the job's secret, in chunks, claimed by
the first rank that needs it so that the others wait for its compile instead of compiling too.

Whoever can reach the store's port can list its keys and plant values; a rank acts only on records the job signed
(HMAC-SHA256 under the job's secret, over the record's store key and its content: docs/CONTRACT.md section 7):
- a claim that names another rank is waited on only when signed; any other claim is taken over, or, when another
  rank took it first, the rank compiles at once;
- a copy's header (its size and SHA-256) is read and checked before any chunk, and its size bounded (MAX_COPY_BYTES);
  each chunk must be as long as the header says, and the whole must match its digest;
- a gave-up record can only end a wait early, so it is not signed: the worst a planted one does is a compile.
Claims belong to one attempt of the job (a restart never waits on a claim of ranks that are gone); values serve
every attempt. A store that fails turns the share off for this rank (launcher.rank.compile_cache.store_calls).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Any

from launcher.rank.compile_cache.store_calls import StoreCalls, StoreOff

__all__ = ["JobShare", "CHUNK_BYTES", "MAX_COPY_BYTES", "signed", "verified"]

# torch's TCPStore server resets a connection that sends a value over 8 MiB. Each chunk is one `set` or `get`, not
# one `multi_set`/`multi_get` for all of an entry's: torch 2.13's default (libuv) server takes time that grows with
# the square of a request's size when it holds several values. A 20 MiB entry over loopback, in one call for all its
# chunks: 9.7 s to publish and 6.4 s to fetch, against 89 and 66 ms in 6 and 8 calls; a larger entry would run past
# COMPILE_STORE_SECONDS and turn the share off.
CHUNK_BYTES = 4 << 20
# The largest copy of a graph (its entry and kernels) or probe library that is published, fetched or kept on a node.
MAX_COPY_BYTES = 1 << 30
_POLL_SECONDS = 0.05


class JobShare:
    """One rank's view of the job's copies: `fetch`, `claim`, `wait_for`, `publish`, `give_up`."""

    def __init__(self, store: Any, secret: bytes, attempt: str, member: str, alive: Callable[[str], bool]) -> None:
        """`member`: this rank as "host pid"; `alive(claimer)`: whether a claimer may still publish."""
        self._call = StoreCalls(store)
        self._secret = secret
        space = hashlib.sha256(secret).hexdigest()[:16]
        self._values = f"accel-compile/{space}/value/"
        self._claims = f"accel-compile/{space}/{attempt}/claim/"
        self._gone = f"accel-compile/{space}/{attempt}/gave-up/"
        self._me = member
        self._alive = alive

    @property
    def working(self) -> bool:
        """False once a call to the job's store failed: the rank shares within its node only from then on."""
        return not self._call.off

    def fetch(self, key: str) -> bytes | None:
        """The job's signed copy of `key`, checked; None when there is none or it does not check."""
        try:
            return self._fetch(key)
        except StoreOff:
            return None

    def claim(self, key: str) -> str | None:
        """Claim the compile of `key`: None when this rank compiles it, else the claimer ("host pid")."""
        claim_key = self._claims + key
        mine = self._signed(claim_key, self._me)
        try:
            held = bytes(self._call("compare_set", claim_key, "", mine))
            if held != mine and self._verified(claim_key, held) is None:  # not the job's: take its place
                held = bytes(self._call("compare_set", claim_key, held, mine))
        except StoreOff:
            return None
        claimer = self._verified(claim_key, held) if held != mine else None
        return None if claimer == self._me else claimer

    def wait_for(self, key: str, claimer: str, seconds: float) -> bytes | None:
        """The claimer's copy of `key` once published; None when it gave up, died, or took longer than `seconds`."""
        deadline = time.monotonic() + seconds
        header, gone = self._values + key, self._gone + key
        try:
            while time.monotonic() < deadline:
                if self._call("check", [header]):
                    return self._fetch(key)
                if self._call("check", [gone]) or not self._alive(claimer):
                    return None
                time.sleep(_POLL_SECONDS)
        except StoreOff:
            return None
        return None

    def publish(self, key: str, payload: bytes) -> None:
        """Sign and store `payload` for `key`: the chunks first, then the signed header that makes them whole."""
        if not 0 < len(payload) <= MAX_COPY_BYTES:
            self.give_up(key)
            return
        header_key = self._values + key
        try:
            for index in range(-(-len(payload) // CHUNK_BYTES)):
                self._call("set", f"{header_key}/{index}", payload[index * CHUNK_BYTES:(index + 1) * CHUNK_BYTES])
            self._call("set", header_key, self._signed(header_key, f"{len(payload)} "
                                                                    f"{hashlib.sha256(payload).hexdigest()}"))
        except StoreOff:
            return

    def give_up(self, key: str) -> None:
        """Tell the ranks waiting for this rank's compile of `key` that no copy is coming."""
        try:
            self._call("set", self._gone + key, "1")
        except StoreOff:
            return

    def _fetch(self, key: str) -> bytes | None:
        header_key = self._values + key
        if not self._call("check", [header_key]):
            return None
        size, digest = _size_and_digest(self._verified(header_key, bytes(self._call("get", header_key))))
        if size is None:
            return None
        chunks = [f"{header_key}/{index}" for index in range(-(-size // CHUNK_BYTES))]
        if not self._call("check", chunks):
            return None
        parts, whole = [], hashlib.sha256()
        for index, chunk_key in enumerate(chunks):
            chunk = bytes(self._call("get", chunk_key))
            if len(chunk) != min(CHUNK_BYTES, size - index * CHUNK_BYTES):
                return None  # the header's size bounds what is read: a chunk of another length ends the fetch
            whole.update(chunk)
            parts.append(chunk)
        return b"".join(parts) if hmac.compare_digest(whole.hexdigest().encode(), digest.encode()) else None

    def _signed(self, store_key: str, body: str) -> bytes:
        """`body` with the job's MAC for it at `store_key`, as stored."""
        return signed(self._secret, store_key, body.encode())

    def _verified(self, store_key: str, record: bytes) -> str | None:
        """The body of a record the job signed for `store_key`; None for anything else."""
        body = verified(self._secret, store_key, record)
        try:
            return body.decode("utf-8") if body is not None else None
        except UnicodeDecodeError:
            return None


def signed(secret: bytes, store_key: str, body: bytes) -> bytes:
    """`body` and its MAC under `secret` for `store_key` (HMAC-SHA256 over the key and the body), as stored."""
    return body + b" " + _mac(secret, store_key, body)


def verified(secret: bytes, store_key: str, record: bytes) -> bytes | None:
    """The body of a record `signed` for `store_key` under `secret`; None for anything else."""
    body, _, mac = record.rpartition(b" ")
    return body if body and hmac.compare_digest(mac, _mac(secret, store_key, body)) else None


def _mac(secret: bytes, store_key: str, body: bytes) -> bytes:
    return hmac.new(secret, store_key.encode() + b"\0" + body, hashlib.sha256).hexdigest().encode()


def _size_and_digest(header: str | None) -> tuple[int, str] | tuple[None, None]:
    """A signed header's size, when within MAX_COPY_BYTES, and SHA-256; (None, None) otherwise."""
    size_text, _, digest = (header or "").partition(" ")
    size = int(size_text) if size_text.isascii() and size_text.isdigit() else 0
    return (size, digest) if 0 < size <= MAX_COPY_BYTES and len(digest) == 64 else (None, None)
