"""`accel-launch status`'s cells: seconds read as a person reads them, never as 7.87e-05 or 1.23e+04 (a rank's
last step a moment ago in a fast loop, or hours ago in a hang)."""

from __future__ import annotations

import pytest

from launcher.run.watch.status_rows import StatusRow


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "-"), (0.0, "0"), (7.87e-05, "<0.001"), (0.000865, "<0.001"), (0.00101, "0.00101"), (0.0456, "0.0456"),
    (1.5, "1.5"), (12.345, "12.3"), (99.94, "99.9"), (123.4, "123"), (12345.6, "12346"),
])
def test_seconds_are_shown_with_three_digits_and_no_exponent(seconds: float | None, shown: str):
    row = StatusRow(rank=0, host="hosta", pid=1, phase="training", steps=3, step_seconds=seconds, work=None,
                    age=seconds, cpu_percent=None, memory=None)
    cells = row.cells()

    assert cells[5] == shown
    assert cells[7] == ("-" if seconds is None else f"{shown} s ago")
