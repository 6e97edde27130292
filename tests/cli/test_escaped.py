"""Every error line is one line: user text is shown with its control characters escaped."""

from __future__ import annotations

import pytest

from launcher.cli.escaped import one_line


@pytest.mark.parametrize(("text", "shown"), [
    ("plain 'text' with spaces and ünïcödé", "plain 'text' with spaces and ünïcödé"),
    ("a\nb\r\tc", "a\\nb\\r\\tc"),
    ("bell\x07 escape\x1b[2J del\x7f", "bell\\x07 escape\\x1b[2J del\\x7f"),
    ("line\u2028separator, override\u202eevil, nbsp\u00a0", "line\\u2028separator, override\\u202eevil, nbsp\\xa0"),
    ("private use \U000f0000", "private use \\U000f0000"),
])
def test_control_characters_are_escaped_and_printable_text_is_kept(text: str, shown: str) -> None:
    assert one_line(text) == shown
    assert one_line(text).isprintable()
