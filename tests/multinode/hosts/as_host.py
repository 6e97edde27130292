"""Become a host: `python as_host.py NAME HOSTS_FILE PROGRAM [ARGS]...`, run inside fresh UTS and mount
namespaces (`unshare --uts --mount`): set the hostname to NAME, show HOSTS_FILE as /etc/hosts (only in
this mount namespace; `-` leaves /etc/hosts alone), then exec PROGRAM."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def main(argv: list[str]) -> None:
    name, hosts_file, program = argv[0], argv[1], argv[2:]
    socket.sethostname(name)
    if hosts_file != "-":
        subprocess.run(["mount", "--bind", hosts_file, "/etc/hosts"], check=True)
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
