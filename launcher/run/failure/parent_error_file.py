"""The launcher's own error file: where a parent (a scheduler, an outer launch) set `TORCHELASTIC_ERROR_FILE`
for the launcher itself, a failed job's root cause is written there, as torchrun's `@record` main writes it.

torchrun hands on the first failed rank's record (torch's `ErrorHandler.dump_error_file`: the rank's JSON,
its `message.errorCode` set to the rank's exit code) and writes nothing when that rank left no record; a
failure of the launch itself (a rendezvous that failed, a stop signal, `--timeout`) is written as torch's
`record_exception` writes an exception: `{"message": {"message": ..., "extraInfo": {"py_callstack": ...,
"timestamp": ...}}}`. docs/CONTRACT.md section 4.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from launcher.contract.names import ERROR_FILE_VAR
from launcher.run.failure.rank_failure import RankFailure

__all__ = ["hand_on_root_cause", "parent_error_record", "write_parent_error_file"]


def hand_on_root_cause(path: str | None, status: int, message: str | None, failure: RankFailure | None) -> str | None:
    """Write what torchrun would to the launcher's own error file `path` (none: nothing to do); None, or why it
    could not be written."""
    record = parent_error_record(status, message, failure)
    if not path or record is None:
        return None
    try:
        write_parent_error_file(path, record)
    except OSError as exc:
        return f"{ERROR_FILE_VAR} {path!r} was not written: {exc.strerror or exc}"
    return None


def parent_error_record(status: int, message: str | None, failure: RankFailure | None) -> dict | None:
    """What torchrun would write for a job that ended with `status` (None: nothing to write)."""
    if status == 0:
        return None
    if failure is not None:
        return _with_error_code(failure.record, failure.exitcode) if failure.record is not None else None
    text = message or f"the job failed with exit status {status}"
    return {"message": {"message": text, "extraInfo": {"py_callstack": text, "timestamp": str(int(time.time()))}}}


def write_parent_error_file(path: str, record: Mapping[str, object]) -> None:
    """Replace the file at `path` with `record` as JSON (torch removes an existing one first, as here);
    raises OSError when it cannot be written."""
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "x", encoding="utf-8") as handle:
        json.dump(record, handle)


def _with_error_code(record: Mapping[str, object], exitcode: int) -> dict:
    """The rank's record with `message.errorCode` set to its exit code, as torch sets it (only in a record whose
    message is an object, and only for a non-zero code: a rank killed by a signal could not write its own)."""
    copy = dict(record)
    message = copy.get("message")
    if isinstance(message, Mapping) and exitcode:
        copy["message"] = {**message, "errorCode": exitcode}
    return copy
