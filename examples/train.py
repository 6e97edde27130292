"""A small real training job: an MLP on a synthetic regression task, DDP, and a plain torch.compile.

The launcher has already made its resolved backend torch's default, so `torch.compile(model)` below uses
it without naming one. Run it with: accel-launch --nproc-per-node 2 examples/train.py --steps 20
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per rank and step")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--deepspeed_config", help="a ds_config; accel-launch reads its compile.backend")
    return parser.parse_args()


def synthetic_batch(generator: torch.Generator, batch_size: int, device: torch.device):
    """Inputs and targets of y = sum of sin(x), the same task on every rank, different samples."""
    inputs = torch.randn(batch_size, 16, generator=generator).to(device)
    targets = inputs.sin().sum(dim=1, keepdim=True)
    return inputs, targets


def say(line: str) -> None:
    """Print one line in one write: ranks run unbuffered (PYTHONUNBUFFERED=1 is common), where print() writes
    the text and its newline apart and two ranks sharing the terminal could splice their lines together."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    args = parse_args()
    from accelerators import get_accelerator

    accelerator = get_accelerator()
    dist.init_process_group(accelerator.communication_backend_name())
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(accelerator.device_name(), local_rank if accelerator.device_name() != "cpu" else None)
    if device.type != "cpu":
        torch.accelerator.set_device_index(local_rank)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
        ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type != "cpu" else None)
        compiled = torch.compile(ddp)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
        generator = torch.Generator().manual_seed(1000 + rank)
        backend = torch.compiler.get_default_backend() if hasattr(torch.compiler, "get_default_backend") else "inductor"
        say(f"rank {rank}/{world}: compile backend {backend!r} "
            f"(from {os.environ.get('ACCEL_COMPILE_BACKEND_SOURCE', 'unknown')}) on {device}")
        for step in range(1, args.steps + 1):
            inputs, targets = synthetic_batch(generator, args.batch_size, device)
            loss = nn.functional.mse_loss(compiled(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step == 1 or step == args.steps:
                averaged = loss.detach().clone()
                dist.all_reduce(averaged)
                if rank == 0:
                    say(f"step {step}: loss {averaged.item() / world:.4f}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
