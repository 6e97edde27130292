"""A rank that records what it received into $RECORD_DIR/rank-<RANK>.json: environment, backend, __main__ facts."""

import json
import os
import pickle
import sys

import torch


def square(value):
    return value * value


def main() -> None:
    keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
            "ACCEL_COMPILE_BACKEND", "ACCEL_COMPILE_BACKEND_SOURCE", "ACCEL_ACCELERATOR", "OMP_NUM_THREADS",
            "FROM_ENV_FILE"]
    restored = pickle.loads(pickle.dumps(square))
    record = {
        "env": {key: os.environ.get(key) for key in keys},
        "default_backend": str(torch.compiler.get_default_backend()),
        "argv": sys.argv,
        "file": __file__,
        "path0": sys.path[0],
        "name": __name__,
        "pickled_square_of_7": restored(7),
    }
    path = os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main()
