"""A rank that records the key inductor's FX-graph cache gives one small graph on the device its LOCAL_RANK names
(`cuda:N`, as a training script picks it), with the device faked (FakeTensorMode: no GPU needed), into
$RECORD_DIR/rank-<RANK>.json: which keys match across a node's ranks (docs/CONTRACT.md, section 7)."""

import json
import os

import torch
import torch.fx
from torch._inductor.codecache import compiled_fx_graph_hash
from torch._subclasses.fake_tensor import FakeTensorMode


def step(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).sin()


def main() -> None:
    device = f"cuda:{os.environ['LOCAL_RANK']}"
    graph = torch.fx.symbolic_trace(step)
    with FakeTensorMode(allow_non_fake_inputs=True):
        key = compiled_fx_graph_hash(graph, [torch.empty(8, device=device)], {}, [])[0]
    record = {"key": key, "device": device, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "env": {"LOCAL_RANK": os.environ["LOCAL_RANK"]}}
    with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json"), "w") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main()
