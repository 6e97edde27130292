"""A rank whose forked child (a DataLoader worker, say) is ended by SIGTERM: the child ends alone, and the rank
goes on to print its line and exit 0."""
import os
import signal

child = os.fork()
if child == 0:
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(3)  # never reached when SIGTERM ends the child
_, status = os.waitpid(child, 0)
os.write(1, f"child ended by signal {os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}\n".encode())
