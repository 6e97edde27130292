"""The job as JSON, the form in which a hostfile launch's head hands every node the same JobConfig
(launcher/head/commands.py writes it, launcher/job/node_job.py reads it back). Read as untrusted input: every
field of its type, every number finite, no unknown field, no NUL in any text (docs/RELIABILITY.md)."""

from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import fields, is_dataclass

from launcher.contract.job_config import JobConfig, JobDataError

__all__ = ["job_to_json", "job_from_json"]


def job_to_json(job: JobConfig) -> str:
    """The job as JSON text (`job_from_json` gives it back equal)."""
    return json.dumps(_data(job), separators=(",", ":"))


def job_from_json(text: str) -> JobConfig:
    """The job `job_to_json` wrote; raises JobDataError, ValueError (or TypeError) on anything else."""
    return _build(JobConfig, json.loads(text))


def _data(value: object) -> object:
    """Dataclasses as dicts of their fields, tuples as lists: plain JSON values."""
    if is_dataclass(value):
        return {item.name: _data(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_data(item) for item in value]
    if isinstance(value, dict):
        return {key: _data(item) for key, item in value.items()}
    return value


def _build(kind: typing.Any, data: object, where: str = "the job") -> typing.Any:
    """The value of type `kind` that `_data` turned into `data` (dataclasses and tuples rebuilt), every field
    of the type its hint says and every number finite; ValueError naming the field otherwise."""
    if isinstance(kind, type) and is_dataclass(kind):
        if not isinstance(data, dict):
            raise JobDataError(f"{where} must be an object")
        names = [item.name for item in fields(kind)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise JobDataError(f"{where} has no field {unknown[0]!r}")
        hints = typing.get_type_hints(kind)
        return kind(**{name: _build(hints[name], data[name], f"{where}.{name}") for name in names if name in data})
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        return _build(next(arg for arg in args if arg is not type(None)), data, where)
    if origin is tuple:
        return tuple(_build(args[0], item, f"{where}[{index}]") for index, item in enumerate(_of(list, data, where)))
    if origin is dict:
        return {_build(args[0], key, f"{where} key"): _build(args[1], value, f"{where}[{key!r}]")
                for key, value in _of(dict, data, where).items()}
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        data = float(data)
    if kind is float and not math.isfinite(_of(float, data, where)):
        raise JobDataError(f"{where} must be a finite number, got {data}")
    if kind is str and "\0" in _of(str, data, where):
        raise JobDataError(f"{where} holds a NUL character, which no argument, path or variable can")
    return _of(kind, data, where)


def _of(kind: type, data: object, where: str) -> typing.Any:
    """`data` when it is a `kind` (a bool is not an int here); ValueError naming `where` otherwise."""
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        raise JobDataError(f"{where} must be {_JSON_NAMES.get(kind, kind.__name__)}, got {type(data).__name__}")
    return data


_JSON_NAMES = {list: "a list", dict: "an object", str: "text", int: "a whole number", float: "a number",
               bool: "true or false"}
