"""A rank blocked in torch's C++, where no Python signal handler runs: a store client that retries its connect
to a port nobody listens on (as a rank waits for a peer's store, or in a hung collective). It says so in
$RECORD_DIR/blocked, then stays there for up to 100 s."""

import os
from datetime import timedelta

import torch.distributed as dist

from _rank import mark_started

mark_started()
open(os.path.join(os.environ["RECORD_DIR"], "blocked"), "w").close()
dist.TCPStore("127.0.0.1", 9, is_master=False, timeout=timedelta(seconds=100))
