"""torch.compile with an explicit backend="inductor", as most tutorials write it."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
compiled = torch.compile(model, backend="inductor")
x = torch.randn(4, 8)
print("out:", torch.allclose(compiled(x), model(x), atol=1e-5), flush=True)
