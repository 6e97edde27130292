"""The resolved compile backend of a launch: one type, and the forms it travels in.

`ResolvedBackend` is resolved once (launcher.job.backend_order) and held once, by the JobConfig, which
carries it whole to every node. Every rank gets it as two variables (`environment`, read back with
`from_environment`); every node of a multi-node job claims it at the rendezvous (`rendezvous_options`,
read back as a `BackendClaim`). Whether an accelerator accepts it is judged by `backend_refusal`: by the
launcher and by every node before anything starts, and by every rank again when dynamo arrives.

What a node reads back from the rendezvous store another node wrote, so it is untrusted (docs/RELIABILITY.md,
"Nothing another node writes is trusted"): `decode` reads at most `MAX_CLAIM_BYTES` and takes only the exact
shape `encode` writes, or raises `ClaimFormatError` saying what is wrong, in words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields

from accelerators import UnsupportedBackendError, explain_unsupported, is_import_path
from launcher.contract.names import ACCELERATOR_KEYWORD, BACKEND_SOURCE_VAR, BACKEND_VAR
from launcher.escaped import short_line

__all__ = ["ResolvedBackend", "BackendClaim", "NodeClaim", "ClaimFormatError", "backend_refusal", "CLAIM_KEYS",
           "MAX_CLAIM_BYTES"]

# The rdzv_configs keys that carry a node's claim to its backend agreement.
CLAIM_KEYS = ("accel_backend", "accel_backend_source", "accel_host", "accel_accelerator")
# A claim is a few short strings (a path in its source at most): far below this.
MAX_CLAIM_BYTES = 64 << 10


class ClaimFormatError(ValueError):
    """Bytes in the rendezvous store that are not a claim `BackendClaim.encode` wrote; the message says why."""


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

    def rendezvous_options(self, host: str, accelerator: str) -> dict[str, str]:
        """The rdzv_configs entries that make this node's `BackendClaim` at the backend agreement (its torch and
        Python are the node launcher's own)."""
        return dict(zip(CLAIM_KEYS, (self.name, self.source, host, accelerator)))


@dataclass(frozen=True)
class BackendClaim:
    """One node's resolved backend, the level it came from (`--compile-backend`, ...) and its host; and the facts
    that must be the same on every node beside it: torch's version (with its build, `2.13.0+cpu`), Python's
    version, the accelerator kind and, where ranks agree, the job's size as the member counts it ('' where a
    caller has none to give)."""

    backend: str
    source: str
    host: str
    torch: str = ""
    python: str = ""
    accelerator: str = ""
    world: str = ""

    def encode(self) -> bytes:
        """The claim as the bytes a rendezvous store holds."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> BackendClaim:
        """The claim that `encode` wrote; ClaimFormatError for anything else."""
        return _claim(_json_object(raw), set())


@dataclass(frozen=True)
class NodeClaim:
    """Node `node`'s claim, as a node whose backend differs from node 0's writes it for the others to read."""

    node: int
    claim: BackendClaim

    def encode(self) -> bytes:
        """The claim's fields and `node`, as the bytes a rendezvous store holds."""
        return json.dumps({**asdict(self.claim), "node": self.node}, sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> NodeClaim:
        """The node's claim that `encode` wrote; ClaimFormatError for anything else."""
        record = _json_object(raw)
        claim = _claim(record, {"node"})
        if type(record["node"]) is not int:
            raise ClaimFormatError(f"its node is not a whole number but {_kind(record['node'])}")
        return cls(record["node"], claim)


def _claim(record: dict[str, object], extra: set[str]) -> BackendClaim:
    """The claim in `record`, which must hold its strings and the `extra` fields, nothing else."""
    text = [field.name for field in fields(BackendClaim)]
    for name in text:
        if name in record and not isinstance(record[name], str):
            raise ClaimFormatError(f"its {name} is not a string but {_kind(record[name])}")
    expected = {*text, *extra}
    if set(record) != expected:
        missing, unknown = sorted(expected - set(record)), sorted(set(record) - expected)
        said = [f"missing {', '.join(missing)}"] if missing else []
        said += [f"unknown {', '.join(repr(short_line(name, 40)) for name in unknown[:3])}"] if unknown else []
        raise ClaimFormatError(f"its fields are not {', '.join(sorted(expected))} ({'; '.join(said)})")
    return BackendClaim(**{name: str(record[name]) for name in text})


def _json_object(raw: bytes) -> dict[str, object]:
    """`raw` as a JSON object, read defensively: bounded, strict UTF-8, any nesting depth refused in words."""
    if len(raw) > MAX_CLAIM_BYTES:
        raise ClaimFormatError(f"it is {len(raw)} bytes, more than the {MAX_CLAIM_BYTES} a claim may take")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClaimFormatError(f"it is not UTF-8 text (byte {exc.start})") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise ClaimFormatError("it is JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ClaimFormatError(f"it is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError:  # a number of more digits than int() takes
        raise ClaimFormatError("it holds a number of more digits than can be read") from None
    if not isinstance(record, dict):
        raise ClaimFormatError(f"it is {_kind(record)}, not a JSON object")
    return record


def _kind(value: object) -> str:
    """`a list`, `a number`, ...: the JSON kind of `value`, in words."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


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
