"""Every line the launcher prints is what it means to print: control characters escaped, long text shortened."""

from __future__ import annotations

import pytest

from launcher.escaped import escaped_lines, one_line, short_line


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


def test_a_long_text_is_shown_escaped_with_its_middle_left_out_and_its_length_said() -> None:
    text = "\x1b[2J" + "x" * 5_000_000 + "\nend"
    shown = short_line(text)
    assert shown.isprintable() and len(shown) < 300
    assert shown.startswith("\\x1b[2Jxxx") and shown.endswith("xxx\\nend (5000008 characters)")
    assert short_line("short\n") == "short\\n"


def test_each_of_the_launchers_own_lines_is_escaped_and_the_line_breaks_between_them_are_kept() -> None:
    assert escaped_lines("rank 1 failed\n  last lines:\n    \x1b[31mred\r") == (
        "rank 1 failed\n  last lines:\n    \\x1b[31mred\\r")
