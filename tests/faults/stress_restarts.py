"""Stress: `--max-restarts 1` with gloo on CPU, N launches in a row; every one must restart and succeed.

Usage: python tests/faults/stress_restarts.py [N]   (default 20). Rank 1 fails in the first attempt while
rank 0 ignores SIGTERM; the second attempt re-forms the gloo group and all-reduces. Prints one line per
run (status, seconds) and exits 1 if any run did not succeed within 120 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"
ARGS = ["--grace-period", "1", "--nproc-per-node", "2", "--max-restarts", "1", "--timeout", "120"]


def one_run(index: int) -> bool:
    """One launch; True when it restarted once and succeeded."""
    with tempfile.TemporaryDirectory() as records:
        env = {**os.environ, "RECORD_DIR": records, "GLOO": "1", "IGNORE_TERM": "1"}
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "launcher", *ARGS, str(SCRIPTS / "flaky.py")], env=env,
                              capture_output=True, text=True, timeout=180)
        attempts = sorted(path.name for path in Path(records).glob("attempt-1-*"))
        ok = done.returncode == 0 and attempts == ["attempt-1-0", "attempt-1-1"]
        print(f"run {index}: status {done.returncode}, {time.monotonic() - began:.1f} s, {'ok' if ok else 'FAILED'}",
              flush=True)
        if not ok:
            print(done.stderr[-2000:], file=sys.stderr)
        return ok


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    results = [one_run(index) for index in range(count)]
    print(f"{sum(results)} of {count} runs restarted and succeeded")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
