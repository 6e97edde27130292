"""A rank program that only imports torch: the bootstrap's own cost shows beside it."""

import torch  # noqa: F401
