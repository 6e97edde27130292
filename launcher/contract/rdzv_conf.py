"""`--rdzv-conf key=value,...`: only the keys torch elastic's c10d and static rendezvous read, each value
checked as torch would read it (and bounded, which torch does not), before any rank starts.

torch ignores a key it does not know, so a typo (`join_timout=60`) would silently keep the default: here
it is refused with the known keys. The keys the launcher sets itself (`rank`, from --node-rank, and the
backend agreement's `accel_*`) cannot be overridden.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping

from launcher.contract.seconds import whole_seconds
from launcher.errors import UsageError

__all__ = ["parse_rdzv_conf", "check_rdzv_conf", "RDZV_CONF_KEYS"]

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
    """Raise UsageError for a key torch does not read, one the launcher sets, or a value torch cannot use."""
    for key, value in conf.items():
        if key in _SET_BY_US or key.startswith(_OURS_PREFIX):
            why = _SET_BY_US.get(key, "the launcher sets it")
            raise UsageError(_FLAG, f"{key}={value}", f"{key} cannot be given here: {why}")
        check = RDZV_CONF_KEYS.get(key)
        if check is None:
            close = difflib.get_close_matches(key, RDZV_CONF_KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(_FLAG, f"{key}={value}", f"unknown key (known: {', '.join(RDZV_CONF_KEYS)}){hint}")
        if not isinstance(value, str):
            raise UsageError(f"{_FLAG} {key}", value, "expected text")
        check(key, value)
