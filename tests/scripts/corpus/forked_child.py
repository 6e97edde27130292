"""Processes forked before and after torch is imported, each compiling; the parent joins a process group when it
is one rank of a launch (nothing of a launcher's may act in the children)."""
import os
import sys


def child_compiles() -> None:
    import torch

    value = torch.compile(lambda t: t + 1)(torch.zeros(2)).tolist()
    os.write(1, f"out: child {value}\n".encode())
    os._exit(0)


early = os.fork()
if early == 0:
    child_compiles()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

late = os.fork()
if late == 0:
    child_compiles()
statuses = sorted(os.waitpid(pid, 0)[1] for pid in (early, late))
print("out: children", statuses, flush=True)
if "RANK" in os.environ:
    dist.init_process_group("gloo")
    total = torch.ones(1)
    dist.all_reduce(total)
    os.write(1, f"dist: world {int(total.item()) == dist.get_world_size()}\n".encode())  # one write: ranks share stdout
    dist.destroy_process_group()
sys.exit(0)
