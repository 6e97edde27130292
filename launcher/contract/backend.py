"""The resolved compile backend of a launch: one type, and the forms it travels in.

`ResolvedBackend` is resolved once (launcher.resolve.backend) and held once, by the JobConfig, which
carries it whole to every node. Every rank gets it as two variables (`environment`, read back with
`from_environment`); every node of a multi-node job claims it at the rendezvous (`rendezvous_options`,
read back as a `BackendClaim`). Whether an accelerator accepts it is judged by `backend_refusal`: by the
launcher and by every node before anything starts, and by every rank again when dynamo arrives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from accelerators import UnsupportedBackendError, explain_unsupported, is_import_path
from launcher.contract.names import ACCELERATOR_KEYWORD, BACKEND_SOURCE_VAR, BACKEND_VAR

__all__ = ["ResolvedBackend", "BackendClaim", "backend_refusal", "CLAIM_KEYS"]

# The rdzv_configs keys that carry a node's claim to its backend agreement.
CLAIM_KEYS = ("accel_backend", "accel_backend_source", "accel_host")


@dataclass(frozen=True)
class ResolvedBackend:
    """The backend every rank will validate and use, the level that gave it, and what that level said."""

    name: str
    source: str
    requested: str

    def describe(self) -> str:
        """`inductor (from --compile-backend)`, noting an explicit `accelerator` request."""
        via = f", via {ACCELERATOR_KEYWORD!r}" if self.requested == ACCELERATOR_KEYWORD else ""
        return f"{self.name} (from {self.source}{via})"

    def environment(self) -> dict[str, str]:
        """The variables every rank of every node gets: the name and its source (docs/CONTRACT.md)."""
        return {BACKEND_VAR: self.name, BACKEND_SOURCE_VAR: self.source}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ResolvedBackend:
        """The backend a rank was given in `environ`; a rank is told the name, so that is what it requested."""
        name = environ.get(BACKEND_VAR, "")
        return cls(name=name, source=environ.get(BACKEND_SOURCE_VAR, BACKEND_VAR), requested=name)

    def rendezvous_options(self, host: str) -> dict[str, str]:
        """The rdzv_configs entries that make this node's `BackendClaim` at the backend agreement."""
        return dict(zip(CLAIM_KEYS, (self.name, self.source, host)))


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


def backend_refusal(backend: ResolvedBackend, accelerator: str, supported: Sequence[str],
                    import_problem: Callable[[str], str | None] | None = None) -> str | None:
    """None when `accelerator`, which supports the names `supported`, can use `backend`; else the one line
    that says why, worded with where the backend came from.

    A name is judged by the accelerators' own `explain_unsupported`, as `set_compile_backend` judges it, so
    that the launcher and the ranks agree. An import path is judged by `import_problem` (the launcher looks
    the module up without importing it); without one it passes here, and the rank that imports it judges it.
    """
    name = backend.name
    if name == name.strip() and is_import_path(name):
        problem = import_problem(name) if import_problem is not None else None
        error = None if problem is None else UnsupportedBackendError(name, accelerator, tuple(supported), problem)
    else:
        error = explain_unsupported(name, accelerator, supported)
    return None if error is None else str(error.with_source(backend.source))
