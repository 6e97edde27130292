"""A rank that says it started ($RECORD_DIR/started-<RANK>, with its host) and then sleeps for ten minutes."""

import os
import socket
import time

with open(os.path.join(os.environ["RECORD_DIR"], f"started-{os.environ['RANK']}"), "w") as handle:
    handle.write(socket.gethostname())
time.sleep(600)
