"""A rank that ignores SIGTERM, so only SIGKILL ends it."""

import signal

from _rank import mark_started, sleep_forever

signal.signal(signal.SIGTERM, signal.SIG_IGN)
mark_started()
sleep_forever()
