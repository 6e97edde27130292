"""A rank that only records that it started."""

from _rank import mark_started

mark_started()
