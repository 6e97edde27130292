"""Explicit backends by name: eager and aot_eager, on functions and a module's own .compile()."""
import torch


def f(x):
    return torch.sin(x) * 2 + 1


torch.manual_seed(0)
x = torch.randn(5)
print("out:", torch.compile(f, backend="eager")(x).sum().item() == f(x).sum().item(), flush=True)
print("out:", torch.allclose(torch.compile(f, backend="aot_eager")(x), f(x)), flush=True)
model = torch.nn.Linear(3, 3)
model.compile(backend="eager")
print("out:", tuple(model(torch.ones(2, 3)).shape), flush=True)
