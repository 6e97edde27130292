"""What a rank may leave at $TORCHELASTIC_ERROR_FILE, one row per kind, with what the launcher then says.

Shared by the rank script `leave_error_file.py` (real launches, tests/faults/test_error_file.py) and the
in-process tests of the reader (tests/run/failure/test_root_cause.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

NOT_THE_RECORD = "its error file was ignored: it is not the record torch elastic writes (no message text)"
MESSAGE_BYTES = 20_000_000
KEPT_BYTES = 4096


def _write(data: Callable[[], bytes]) -> Callable[[str], None]:
    return lambda path: Path(path).write_bytes(data())


def _symlink_to_a_record(path: str) -> None:
    Path(path + ".record").write_text(json.dumps({"message": "ValueError: from the link's target"}))
    os.symlink(path + ".record", path)


def _over_the_limit(path: str) -> None:
    with open(path, "wb") as handle:
        handle.truncate((32 << 20) + 1)  # sparse: costs no disk


# name: (how the rank leaves it at the path, a line of the launcher's summary)
CASES: dict[str, tuple[Callable[[str], None], str]] = {
    "plain text": (_write(lambda: b"rank 0 gave up\n"),
                   "its error file was ignored: it is not JSON (Expecting value at line 1 column 1)"),
    "an empty file": (_write(lambda: b""), "its error file was ignored: it is not JSON (Expecting value"),
    "a JSON list": (_write(lambda: b'[{"message": "ValueError: x"}]'), NOT_THE_RECORD),
    "a number as the message": (_write(lambda: b'{"message": 12345}'), NOT_THE_RECORD),
    "a record of the wrong types": (_write(lambda: b'{"message": {"message": 1, "extraInfo": 5}}'), NOT_THE_RECORD),
    "100000 nested brackets": (_write(lambda: b"[" * 100_000),
                               "its error file was ignored: it is JSON nested too deeply"),
    "invalid UTF-8": (_write(lambda: b'{"message": "\xff"}'),
                      "its error file was ignored: it is not UTF-8 text (byte 13)"),
    "a FIFO": (os.mkfifo, "its error file was ignored: it is a FIFO, not a regular file"),
    "a directory": (os.mkdir, "its error file was ignored: it is a directory, not a regular file"),
    "a symlink to a record": (_symlink_to_a_record, "its error file was ignored: it is a symbolic link"),
    "a file over 32 MiB": (_over_the_limit, "its error file was ignored: it is larger than 33554432 bytes"),
    "a 20 MB message": (_write(lambda: json.dumps({"message": "E" * MESSAGE_BYTES}).encode()),
                        f"E [... {MESSAGE_BYTES - KEPT_BYTES} more bytes cut]"),
    "a lone surrogate in the message": (_write(lambda: b'{"message": "ValueError: bad \\ud800 text"}'),
                                        "    ValueError: bad ? text"),
}


def leave(path: str, case: str) -> None:
    """Leave `case` at `path`."""
    CASES[case][0](path)
