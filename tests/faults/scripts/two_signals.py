"""The launcher's signal rules in a bare process: a thread takes argv[1] then, 20 ms later, argv[2] (the main thread
blocks both, as while the launcher waits in C another of its threads takes a signal), so both handlers are pending
when the main thread runs them (lowest number first); prints the signal the stop action was given."""

import os
import signal
import sys
import threading
import time

from launcher.signal_rules import install_signal_rules, set_stop_action


def stop(signum: int) -> None:
    print(signal.Signals(signum).name, flush=True)
    os._exit(0)


install_signal_rules()
set_stop_action(stop)
first, second = (signal.Signals[name] for name in sys.argv[1:3])


def send() -> None:
    time.sleep(0.1)
    os.kill(os.getpid(), first)
    time.sleep(0.02)
    os.kill(os.getpid(), second)


threading.Thread(target=send).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {first, second})
time.sleep(0.5)
time.sleep(5)
