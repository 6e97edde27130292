"""User text made safe for one line of a terminal: control characters written as their escapes.

Click-free, so that the internal-error line (written before click is imported) is escaped as every other.
"""

from __future__ import annotations

__all__ = ["one_line"]

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """`text` with every character that is not printable (controls, line and paragraph separators,
    bidirectional overrides) written as its escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _ESCAPES.get(char) or _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
