"""A nanoGPT-like first step: a small MLP under DDP and torch.compile (the resolved backend), one training step,
then what inductor's counters say this rank compiled and loaded, into $RECORD_DIR/rank-<RANK>.json. With
$FAIL_FIRST_ATTEMPT, the first attempt then empties the node's inductor cache (as a node replaced by a fresh one)
and fails, while the job's other ranks wait for it in a barrier. With $WAIT_FOR_RANKS, a rank of a smaller world
then waits to be restarted for the nodes that join."""

import gc
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    started = time.monotonic()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    width = int(os.environ.get("MODEL_WIDTH", "32"))
    model = torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.GELU(), torch.nn.Linear(width, 4))
    ddp = DistributedDataParallel(torch.compile(model))  # nanoGPT's order
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    batch = torch.randn(8, 16) + dist.get_rank()
    loss = ddp(batch).pow(2).mean()
    loss.backward()
    optimizer.step()
    first_step = time.monotonic() - started
    inductor = counters["inductor"]
    record = {
        "misses": inductor["fxgraph_cache_miss"],
        "hits": inductor["fxgraph_cache_hit"],
        "fetched_from_job": counters["accel_launch"]["job_copies_fetched"],
        "loaded_from_node": counters["accel_launch"]["node_copies_loaded"],
        "probes_fetched": counters["accel_launch"]["probe_libraries_fetched"],
        "folder_loaded": counters["accel_launch"]["folder_entries_loaded"],
        "aot_hits": counters["aot_autograd"]["autograd_cache_hit"],
        "attempt": os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"),
        "first_step_seconds": first_step,
        "loss": loss.item(),
        "env": {key: os.environ.get(key) for key in ("ACCEL_COMPILE_CACHE", "ACCEL_COMPILE_CACHE_SECRET",
                                                     "TORCHINDUCTOR_COMPILE_THREADS", "TORCH_COMPILE_JOB_ID")},
    }
    with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json"), "w") as handle:
        json.dump(record, handle)
    if os.environ.get("FAIL_FIRST_ATTEMPT") and record["attempt"] == "0":
        shutil.rmtree(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        os._exit(1)  # while the other ranks wait in the barrier below: their attempt fails too, and every node restarts
    if dist.get_world_size() < int(os.environ.get("WAIT_FOR_RANKS", "0")):
        time.sleep(600)  # until the agent restarts this rank for the node that joins
    dist.barrier()
    # The DDP reducer lets go of the process group first: freed last inside the reducer, gloo's group joins its
    # worker thread with the GIL held while that thread waits for the GIL (a deadlock seen in torch 2.13 with a
    # compiled model); freed by destroy_process_group, torch releases the GIL around it.
    del ddp, optimizer, loss
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
