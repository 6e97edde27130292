"""Build DeepSpeed's CPU communication op (deepspeed_shm_comm) into torch's extensions cache, once.

Run by the DeepSpeed tests' session fixture, and by `.ci/run` in the background while system packages
install; a second run finds the op built and loads it in seconds.
"""

from deepspeed.accelerator import get_accelerator

builder = get_accelerator().create_op_builder("ShareMemCommBuilder")
if builder is not None:
    builder.load()
