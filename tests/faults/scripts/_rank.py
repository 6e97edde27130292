"""What every fault script shares: prove that this rank started by writing $RECORD_DIR/started-<RANK>."""

import os
import time


def mark_started(**facts: object) -> None:
    """Write `started-<RANK>` (its pid and any facts, one `key=value` a line) into $RECORD_DIR."""
    lines = [f"pid={os.getpid()}", *(f"{key}={value}" for key, value in facts.items())]
    path = os.path.join(os.environ["RECORD_DIR"], f"started-{os.environ.get('RANK', 'x')}")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def sleep_forever() -> None:
    """Wait to be stopped (bounded, so a test bug cannot leave it running for long)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.2)
