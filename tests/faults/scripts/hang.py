"""A rank that never ends on its own."""

from _rank import mark_started, sleep_forever

mark_started()
sleep_forever()
