"""Rank output: rank 0 (or the script run bare) writes 200 MB of lines to stdout; like a real rank it imports torch first."""

import os
import sys

import torch
import torch._dynamo  # noqa: F401

if os.environ.get("RANK", "0") == "0":
    line = "step 000000 loss 0.123456 lr 0.000100 tokens/s 12345.6\n"
    block = line * (1_000_000 // len(line))
    for _ in range(200 * 1_000_000 // len(block)):
        sys.stdout.write(block)
    sys.stdout.flush()
