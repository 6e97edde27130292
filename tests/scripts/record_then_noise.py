"""The last rank raises inside `@record` (torch's error file), then writes 40 lines of noise at exit."""

import atexit
import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record


def noise() -> None:
    for index in range(40):
        print(f"noise line {index}", file=sys.stderr)


def load_shard(index: int) -> None:
    raise ValueError(f"bad shard {index}: checksum mismatch")


@record
def main() -> None:
    if os.environ.get("NO_RAISE"):
        return
    if int(os.environ["RANK"]) == int(os.environ["WORLD_SIZE"]) - 1:
        atexit.register(noise)
        load_shard(7)
    time.sleep(60)


if __name__ == "__main__":
    main()
