"""What each node launcher resolved as its compile backend, and the words for when nodes disagree.

Torch-free; `backend_agreement` carries these claims between the node launchers at rendezvous.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

__all__ = ["BackendClaim", "disagreement"]


@dataclass(frozen=True)
class BackendClaim:
    """One node's resolved backend, the level it came from (`--compile-backend`, ...) and its host."""

    backend: str
    source: str
    host: str

    def encode(self) -> bytes:
        """The claim as the bytes a rendezvous store holds."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> BackendClaim:
        """The claim that `encode` wrote."""
        fields = json.loads(raw.decode())
        return cls(str(fields["backend"]), str(fields["source"]), str(fields["host"]))


def disagreement(first: BackendClaim, rank: int, claim: BackendClaim) -> str | None:
    """None when node `rank`'s claim has node 0's backend (`first`), else the one line that names both."""
    if claim.backend == first.backend:
        return None
    return (
        f"the nodes resolved different compile backends: node 0 on {first.host} has {first.backend!r} "
        f"(from {first.source}), node {rank} on {claim.host} has {claim.backend!r} (from {claim.source}); "
        "give every node the same --compile-backend or ACCEL_COMPILE_BACKEND"
    )
