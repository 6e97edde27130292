"""A rank that records its whole environment, CPU affinity and argv in $RECORD_DIR/<tag>-<RANK>.json.

`--tag NAME` names the file (default `rank`), so two launchers can record side by side; `--say TEXT`
prints TEXT on stdout and stderr first, and a stderr line that carries torch's own `[rankN]:` prefix. No torch import: the launcher alone decides what is recorded.
"""

import json
import os
import sys


def main() -> None:
    args = sys.argv[1:]
    tag = args[args.index("--tag") + 1] if "--tag" in args else "rank"
    if "--say" in args:
        text = args[args.index("--say") + 1]
        # One write per line: the ranks run unbuffered (PYTHONUNBUFFERED=1, as under torchrun), where print()
        # writes the text and its newline apart, and two ranks sharing the terminal could interleave them.
        sys.stdout.write(f"{text} out {os.environ['RANK']}\n")
        sys.stderr.write(f"{text} err {os.environ['RANK']}\n")
        sys.stderr.write(f"[rank{os.environ['RANK']}]:{text} torch\n")
    record = {"env": dict(os.environ), "affinity": sorted(os.sched_getaffinity(0)), "argv": sys.argv}
    path = os.path.join(os.environ["RECORD_DIR"], f"{tag}-{os.environ['RANK']}.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main()
