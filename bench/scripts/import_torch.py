"""The launch-overhead work: what every real rank does first, import torch and torch._dynamo."""

import torch
import torch._dynamo  # noqa: F401
