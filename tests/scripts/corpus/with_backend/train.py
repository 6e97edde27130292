"""A script whose backend (`--compile-backend mybk:my_backend`) lives beside it; it imports that module too."""
import mybk  # noqa: F401

import torch

print("out:", torch.compile(lambda t: t * t)(torch.full((2,), 3.0)).tolist(), flush=True)
