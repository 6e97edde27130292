"""The job a node launcher gets from the head of a hostfile launch: one JobConfig as JSON, in one variable.

The head prepares the job once (options, env file, ds_config, backend); every node gets it whole, so no
option can be left behind and no node resolves anything again. The node only places it on itself, after
checking it as untrusted input: every field of its type, every number finite, every setting as the head's
own checks would take it (`check_settings`). Placing it is `place_node_job` (launcher.job.build_job).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

from launcher.contract.job_config import JobConfig, JobDataError
from launcher.contract.job_json import job_from_json
from launcher.contract.names import NODE_JOB_VAR
from launcher.errors import NodeIdentityError
from launcher.job.rank_defaults import check_compile_variables
from launcher.job.validate import check_settings
from launcher.contract.variable_names import name_problem

__all__ = ["read_node_job"]


def read_node_job(environ: Mapping[str, str]) -> JobConfig:
    """The job in NODE_JOB_VAR; NodeIdentityError when it is missing or is not what a head writes, UsageError
    for a setting the head would have refused."""
    text = environ.get(NODE_JOB_VAR)
    if text is None:
        raise NodeIdentityError(NODE_JOB_VAR, "", "not set: node launchers are started by accel-launch --hostfile")
    try:
        job = job_from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError, StopIteration, RecursionError) as exc:
        _refuse(text, f" ({exc})" if isinstance(exc, JobDataError) else "")
    bad_name = next((name for name in job.job_env if name_problem(name) is not None), None)
    if bad_name is not None:
        _refuse(text, f" (its environment's {bad_name[:60]!r} {name_problem(bad_name)})")
    check_settings(job.settings)
    check_compile_variables({**job.job_env, **environ})  # this node's own values too, before torch reads them
    return job


def _refuse(text: str, why: str) -> NoReturn:
    """NodeIdentityError for text that is not a job a head writes, its start shown and `why` appended."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    raise NodeIdentityError(NODE_JOB_VAR, shown, f"not a job written by accel-launch --hostfile{why}") from None
