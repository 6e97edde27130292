"""torchrun's fail-fast figure: every rank asks torch.compile for a backend that does not exist."""

import torch

torch.compile(lambda x: x + 1, backend="bogus")
