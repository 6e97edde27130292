"""A rank that ignores SIGTERM, so only SIGKILL ends it."""

from _rank import ignore_sigterm, mark_started, sleep_forever

ignore_sigterm()
mark_started()
sleep_forever()
