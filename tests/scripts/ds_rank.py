"""A DeepSpeed rank written like DeepSpeed's examples; records into $RECORD_DIR/rank-<RANK>.json the backend that
an unmodified `engine.compile()` handed to torch.compile, DeepSpeed's accelerator's backend, and the compile config.

`--no-step` stops after engine.compile() (no forward: nothing is compiled, the hand-over is still recorded).
"""

import argparse
import json
import os
import sys

import torch

handed: list = []
_torch_compile = torch.compile


def spy(*args, **kwargs):
    """torch.compile as DeepSpeed's engine calls it, recording the backend it was handed."""
    handed.append(kwargs.get("backend"))
    return _torch_compile(*args, **kwargs)


torch.compile = spy
imported_before = "deepspeed" in sys.modules

import deepspeed  # noqa: E402
import torch.distributed as dist  # noqa: E402
from deepspeed.accelerator import get_accelerator  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--no-step", action="store_true")
    args = deepspeed.add_config_arguments(parser).parse_args()
    model = torch.nn.Linear(8, 1)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    try:
        engine.compile()
        losses = []
        if not args.no_step:
            for _ in range(2):
                loss = engine(torch.randn(4, 8)).pow(2).mean()
                engine.backward(loss)
                engine.step()
                losses.append(loss.item())
        record = {
            "handed_to_torch_compile": [str(backend) for backend in handed],
            "deepspeed_accelerator": str(get_accelerator().get_compile_backend()),
            "compile_config": engine._config.compile_config.model_dump(),
            "deepspeed_imported_by_bootstrap": imported_before,
            "losses": losses,
        }
        with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{dist.get_rank()}.json"), "w") as handle:
            json.dump(record, handle)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
