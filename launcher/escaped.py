"""Text made safe for one line of a terminal: control characters written as their escapes, and a bound.

Every line the launcher prints goes through `one_line` (docs/RELIABILITY.md, "Nothing another node writes is
trusted"): user text, and what another node wrote to the rendezvous store, which `short_line` also bounds. A
leaf, click-free: the internal-error line (written before click is imported) and the engine's rendezvous
handlers use it too.
"""

from __future__ import annotations

__all__ = ["one_line", "short_line", "escaped_lines"]

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SHORT_LIMIT = 200


def one_line(text: str) -> str:
    """`text` with every character that is not printable (controls, line and paragraph separators,
    bidirectional overrides) written as its escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _ESCAPES.get(char) or _escape(char) for char in text)


def short_line(text: str, limit: int = _SHORT_LIMIT) -> str:
    """`text` as `one_line` shows it, its middle left out (and its length said) when it is longer than `limit`
    characters: a 5 MB host name costs a terminal a few hundred characters."""
    if len(text) <= limit:
        return one_line(text)
    return f"{one_line(text[:limit // 2])}...{one_line(text[-limit // 4:])} ({len(text)} characters)"


def escaped_lines(text: str) -> str:
    """`text`, whose line breaks are the launcher's own, with each of its lines passed through `one_line`."""
    return "\n".join(one_line(line) for line in text.split("\n"))


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
