"""Decorators, mode=, options=, fullgraph=, dynamic= and Module.compile(), all with the default backend."""
import torch


@torch.compile
def plain(x):
    return x * 3


@torch.compile(fullgraph=True, dynamic=True)
def whole(x):
    return x.relu() + 1


x = torch.arange(6.0) - 3
print("out:", plain(x).tolist(), flush=True)
print("out:", whole(x).tolist(), flush=True)
print("out:", torch.compile(lambda t: t - 1, mode="reduce-overhead")(x).tolist(), flush=True)
print("out:", torch.compile(lambda t: t / 2, options={"trace.enabled": False})(x).tolist(), flush=True)
model = torch.nn.Linear(2, 2)
model.compile()
print("out:", tuple(model(torch.ones(3, 2)).shape), flush=True)
