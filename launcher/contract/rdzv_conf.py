"""`--rdzv-conf key=value,...`, handed to the rendezvous handler as torchrun hands it: every key, so that a
handler registered through torch's `torchrun.handlers` entry points reads keys of its own. The values of
the keys torch's c10d and static rendezvous read are checked as torch would read them (and bounded, which
torch does not), before any rank starts; `timeout` only where the handler reads it (static, and the
launcher's one-node store): c10d does not, and torchrun hands it on unread (`check_read_values`).

torch ignores a key it does not know, so a typo (`join_timout=60`) would silently keep the default: a key
that no handler known here reads is passed on all the same, with one note naming the closest known key
(`unread_key_note`). The keys the launcher sets itself (`rank`, from --node-rank, and the backend
agreement's `accel_*`) cannot be overridden.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping

from launcher.contract.user_values import whole_seconds
from launcher.errors import UsageError

__all__ = ["parse_rdzv_conf", "check_rdzv_conf", "check_read_values", "unread_key_note", "RDZV_CONF_KEYS",
           "OWN_KEYS"]

_FLAG = "--rdzv-conf"
_TRUE_FALSE = ("1", "true", "t", "yes", "y", "0", "false", "f", "no", "n")  # torch's get_as_bool
_MAX_KEEP_ALIVE_ATTEMPTS = 1000


def _seconds(key: str, value: str) -> None:
    whole_seconds(f"{_FLAG} {key}", value)


def _attempts(key: str, value: str) -> None:
    if not (len(value) <= 4 and value.isascii() and value.isdigit() and 1 <= int(value) <= _MAX_KEEP_ALIVE_ATTEMPTS):
        raise UsageError(f"{_FLAG} {key}", value, f"expected a whole number from 1 to {_MAX_KEEP_ALIVE_ATTEMPTS}")


def _boolean(key: str, value: str) -> None:
    if value.lower() not in _TRUE_FALSE:
        raise UsageError(f"{_FLAG} {key}", value, f"expected one of {', '.join(_TRUE_FALSE)}")


def _store_type(key: str, value: str) -> None:
    if value.lower() != "tcp":
        raise UsageError(f"{_FLAG} {key}", value, "expected tcp (a rendezvous endpoint here is HOST:PORT)")


# Each key torch's rendezvous handlers read, with the check of its value.
RDZV_CONF_KEYS: dict[str, Callable[[str, str], None]] = {
    "timeout": _seconds,
    "join_timeout": _seconds,
    "last_call_timeout": _seconds,
    "close_timeout": _seconds,
    "heartbeat_timeout": _seconds,
    "read_timeout": _seconds,
    "keep_alive_interval": _seconds,
    "keep_alive_max_attempt": _attempts,
    "is_host": _boolean,
    "store_type": _store_type,
}
# Keys only some handlers read, with those handlers: static's `timeout`, which the one-node store reads too.
_READ_BY = {"timeout": ("static", "one-node")}
# The backends whose handlers read only RDZV_CONF_KEYS (a handler of torch's `torchrun.handlers` reads its own).
OWN_KEYS = ("c10d", "static")
_SET_BY_US = {"rank": "it is --node-rank's"}
_OURS_PREFIX = "accel_"


def parse_rdzv_conf(text: str) -> dict[str, str]:
    """`--rdzv-conf key=value,key=value` as torchrun reads it, each key and value checked."""
    conf: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise UsageError(_FLAG, text, f"{item!r} is not key=value (e.g. join_timeout=600,read_timeout=60)")
        conf[key.strip()] = value.strip()
    check_rdzv_conf(conf)
    return conf


def check_rdzv_conf(conf: Mapping[str, str]) -> None:
    """Raise UsageError for a key the launcher sets, or a value torch's handlers cannot use (a key that only some
    handlers read is checked by `check_read_values`, which knows the handler)."""
    for key, value in conf.items():
        if key in _SET_BY_US or key.startswith(_OURS_PREFIX):
            why = _SET_BY_US.get(key, "the launcher sets it")
            raise UsageError(_FLAG, f"{key}={value}", f"{key} cannot be given here: {why}")
        if not isinstance(value, str):
            raise UsageError(f"{_FLAG} {key}", value, "expected text")
        check = RDZV_CONF_KEYS.get(key)
        if check is not None and key not in _READ_BY:
            check(key, value)


def check_read_values(conf: Mapping[str, str], backend: str) -> None:
    """Raise UsageError for a value of a key that only some handlers read, where `backend`'s handler reads it."""
    for key, readers in _READ_BY.items():
        if key in conf and backend in readers:
            RDZV_CONF_KEYS[key](key, conf[key])


def unread_key_note(conf: Mapping[str, str]) -> str | None:
    """One line about the keys torch's c10d and static rendezvous do not read (None when they read them all)."""
    unread = [key for key in conf if key not in RDZV_CONF_KEYS]
    if not unread:
        return None
    close = {key: difflib.get_close_matches(key, RDZV_CONF_KEYS, n=1) for key in unread}
    hints = "".join(f"; did you mean {close[key][0]!r} for {key!r}?" for key in unread if close[key])
    return (f"{_FLAG}: torch's c10d and static rendezvous read no {', '.join(map(repr, unread))} (they read "
            f"{', '.join(RDZV_CONF_KEYS)}){hints}; passed on to the handler all the same, as torchrun does")
