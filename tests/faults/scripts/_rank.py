"""What every fault script shares: prove that this rank started by writing $RECORD_DIR/started-<RANK>."""

import os
import signal
import time


def mark_started(**facts: object) -> None:
    """Write `started-<RANK>` (its pid and any facts, one `key=value` a line) into $RECORD_DIR."""
    lines = [f"pid={os.getpid()}", *(f"{key}={value}" for key, value in facts.items())]
    path = os.path.join(os.environ["RECORD_DIR"], f"started-{os.environ.get('RANK', 'x')}")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def wait_for_all_started() -> None:
    """Wait (bounded) until every rank of the job wrote its start file, so that a rank failing on purpose
    cannot stop a peer that has not yet installed its SIGTERM handler."""
    record_dir = os.environ["RECORD_DIR"]
    names = [f"started-{rank}" for rank in range(int(os.environ.get("WORLD_SIZE", "1")))]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(os.path.exists(os.path.join(record_dir, name)) for name in names):
        time.sleep(0.02)


def sleep_forever() -> None:
    """Wait to be stopped (bounded, so a test bug cannot leave it running for long)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.2)


def ignore_sigterm() -> None:
    """Survive SIGTERM (only SIGKILL ends this rank), noting when the first one came in $RECORD_DIR/sigterm-<RANK>."""
    path = os.path.join(os.environ["RECORD_DIR"], f"sigterm-{os.environ.get('RANK', 'x')}")

    def note(_signum, _frame) -> None:
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(f"{time.time()}\n")

    signal.signal(signal.SIGTERM, note)
