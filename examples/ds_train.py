"""The same small MLP as train.py, trained through DeepSpeed's engine, with an unmodified `engine.compile()`.

accel-launch hands its resolved backend to DeepSpeed's own accelerator before DeepSpeed's engine is
imported, so `engine.compile()` uses it without naming one; and DeepSpeed accepts the same ds_config
whose `compile.backend` the launcher read. Run it with:
    accel-launch --nproc-per-node 2 examples/ds_train.py --deepspeed --deepspeed_config examples/ds_config.json
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys

import deepspeed
import torch
import torch.distributed as dist
from torch import nn


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps")
    parser.add_argument("--local_rank", type=int, default=-1, help="set by the deepspeed launcher; unused here")
    return deepspeed.add_config_arguments(parser).parse_args()


def say(line: str) -> None:
    """Print one line in one write: ranks run unbuffered (PYTHONUNBUFFERED=1 is common), where print() writes
    the text and its newline apart and two ranks sharing the terminal could splice their lines together."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    try:
        engine.compile()
        rank, world = dist.get_rank(), dist.get_world_size()
        # engine.compile() without arguments compiles with its `backend` default, bound when DeepSpeed was imported.
        used = inspect.signature(engine.compile).parameters["backend"].default
        say(f"rank {rank}/{world}: DeepSpeed's engine.compile() used backend {used!r} "
            f"(from {os.environ.get('ACCEL_COMPILE_BACKEND_SOURCE', 'unknown')})")
        generator = torch.Generator().manual_seed(1000 + rank)
        batch = engine.train_micro_batch_size_per_gpu()
        for step in range(1, args.steps + 1):
            inputs = torch.randn(batch, 16, generator=generator).to(engine.device)
            targets = inputs.sin().sum(dim=1, keepdim=True)
            loss = nn.functional.mse_loss(engine(inputs), targets)
            engine.backward(loss)
            engine.step()
            if step == 1 or step == args.steps:
                averaged = loss.detach().clone()
                dist.all_reduce(averaged)
                if rank == 0:
                    say(f"step {step}: loss {averaged.item() / world:.4f}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
