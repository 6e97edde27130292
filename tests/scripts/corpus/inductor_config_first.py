"""A training script that sets inductor options first, then compiles with the default backend."""
import torch._inductor.config as config

import torch

config.fallback_random = True
torch.manual_seed(0)
model = torch.nn.Linear(6, 3)
compiled = torch.compile(model)
x = torch.randn(2, 6)
print("out:", torch.allclose(compiled(x), model(x), atol=1e-5), flush=True)
