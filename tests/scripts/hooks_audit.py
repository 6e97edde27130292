"""Run under accel-launch: wraps every hook the rank's bootstrap left pending, then imports what training scripts
import, torch's compiler config first; writes $RECORD_DIR/rank-<RANK>.json: each hook that ran, what modules it
imported itself, and how long it took."""
import json
import os
import sys
import time

from launcher.rank import after_import as hooks

ran = []


def audited(name, callback):
    def run(module):
        before, start = set(sys.modules), time.perf_counter()
        callback(module)
        ran.append({"hook": name, "imported": sorted(set(sys.modules) - before),
                    "seconds": time.perf_counter() - start})
    return run


for name, callbacks in hooks._FINDER.callbacks.items():
    callbacks[:] = [audited(name, callback) for callback in callbacks]

import torch._inductor.config  # noqa: E402,F401
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import deepspeed  # noqa: E402,F401
import transformers.training_args  # noqa: E402,F401

torch.compile(lambda t: t + 1)(torch.ones(1))
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json"), "w") as record:
    json.dump(ran, record)
