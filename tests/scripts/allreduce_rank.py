"""A rank of a multi-node test: all_reduce of (rank + 1), then a record of what this rank received."""

import json
import os
import socket
import sys

import torch
import torch.distributed as dist

# What else torch elastic gives each rank, for comparing the launch paths variable by variable.
TORCH_VARS = ("GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "TORCHELASTIC_RESTART_COUNT",
              "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")


def main() -> None:
    dist.init_process_group("gloo")
    try:
        total = torch.tensor([float(dist.get_rank() + 1)])
        dist.all_reduce(total)
        record = {
            "sum": total.item(),
            "host": socket.gethostname(),
            "argv": sys.argv[1:],
            "env": {key: os.environ.get(key) for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK",
                                                         "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                                         "ACCEL_COMPILE_BACKEND", "ACCEL_COMPILE_BACKEND_SOURCE",
                                                         "EXPORTED", *TORCH_VARS)},
        }
    finally:
        dist.destroy_process_group()
    with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json"), "w") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main()
