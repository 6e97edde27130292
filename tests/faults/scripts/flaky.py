"""Rank FAIL_RANK exits 3 in the first attempt only; every attempt records itself in attempt-<n>-<rank>.

With GLOO=1 each rank joins a gloo group and all-reduces before it records (so a restart proves the
group re-forms); with IGNORE_TERM=1 the other ranks of the first attempt ignore SIGTERM.
"""

import os
import sys

from _rank import ignore_sigterm, mark_started, sleep_forever, wait_for_all_started

attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = os.environ["RANK"]
if os.environ.get("GLOO") == "1":
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    total = torch.ones(1)
    dist.all_reduce(total)
    dist.destroy_process_group()
    assert int(total.item()) == int(os.environ["WORLD_SIZE"])
from accelerators import get_accelerator  # noqa: E402  (the backend the bootstrap validated and set)

facts = {"attempt": attempt, "backend": get_accelerator().get_compile_backend()}
if attempt == 0 and os.environ.get("IGNORE_TERM") == "1":
    ignore_sigterm()
mark_started(**facts)
with open(os.path.join(os.environ["RECORD_DIR"], f"attempt-{attempt}-{rank}"), "w", encoding="utf-8") as handle:
    handle.write(repr(facts))
if attempt == 0 and rank == os.environ.get("FAIL_RANK", "1"):
    wait_for_all_started()
    print(f"rank {rank}: failing once on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
if attempt == 0 and os.environ.get("IGNORE_TERM") == "1":
    sleep_forever()
