"""The accelerator package's errors; each words its own one-line message from the facts it holds."""

from __future__ import annotations

from collections.abc import Sequence

_SHOWN_MAX = 80


def shown(value: str) -> str:
    """The value quoted for a one-line message, shortened when it is very long."""
    if len(value) <= _SHOWN_MAX:
        return repr(value)
    return f"{value[:60]!r}... ({len(value)} characters)"


def closest(name: str, choices: Sequence[str]) -> str | None:
    """The choice closest to `name`, compared case-insensitively and ignoring surrounding whitespace."""
    import difflib  # only for a refusal's suggestion: not in every rank's start

    by_lower = {choice.lower(): choice for choice in choices}
    matches = difflib.get_close_matches(name.strip().lower(), list(by_lower), n=1)
    return by_lower[matches[0]] if matches else None


class UnknownAcceleratorError(ValueError):
    """An accelerator name that the registry does not know."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(sorted(known))
        super().__init__(f"unknown accelerator {shown(name)}; known: {', '.join(self.known)}")


class AcceleratorUnavailableError(ValueError):
    """A known accelerator that this machine cannot run."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"accelerator {shown(name)} is not available here ({why})")


class UnsupportedBackendError(ValueError):
    """A compile backend that an accelerator refuses, with the reason and what it accepts."""

    def __init__(
        self,
        backend: str,
        device: str,
        supported: Sequence[str],
        reason: str,
        source: str | None = None,
    ) -> None:
        self.backend = backend
        self.device = device
        self.supported = tuple(supported)
        self.reason = reason
        self.source = source
        super().__init__(self._message())

    @property
    def suggestion(self) -> str | None:
        """The supported name closest to the backend, if any is close enough."""
        stripped = self.backend.strip()
        if stripped != self.backend and stripped in self.supported:
            return stripped
        return closest(self.backend, self.supported)

    def with_source(self, source: str) -> UnsupportedBackendError:
        """The same facts, plus where the value came from (e.g. '--compile-backend')."""
        return UnsupportedBackendError(self.backend, self.device, self.supported, self.reason, source)

    def _message(self) -> str:
        origin = f" (from {self.source})" if self.source else ""
        listed = ", ".join(self.supported) or "none"
        text = (
            f"compile backend {shown(self.backend)}{origin} is not supported on {self.device}: "
            f"{self.reason}; supported: {listed}"
        )
        suggestion = self.suggestion
        return f"{text}; did you mean {suggestion!r}?" if suggestion else text
