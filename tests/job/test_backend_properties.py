"""Property tests of `resolve_backend`: any mix of the four levels gives the first set level and its source."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.contract.names import ACCELERATOR_KEYWORD, BACKEND_VAR, DEFAULT_SOURCE
from launcher.errors import DsConfigError, UsageError
from launcher.job.backend_order import DsConfigRef, resolve_backend

DEFAULT = "the-default"
# Backend names as users type them: real ones, the keyword, odd ones (the resolver passes them on unchecked).
NAMES = st.one_of(
    st.sampled_from(["inductor", "eager", "aot_eager", ACCELERATOR_KEYWORD, "Accelerator", " inductor", "pkg.mod:fn"]),
    st.text(min_size=1, max_size=12).filter(lambda text: text.strip()),
)
BLANK = st.sampled_from(["", " ", "\t", "\n"])
ENV_LEVEL = st.one_of(st.none(), BLANK, NAMES)  # None: the variable is absent
# The ds_config level: no file, a file without `compile`, without `compile.backend`, or with a backend.
DS_LEVEL = st.one_of(st.none(), st.just({}), st.just({"compile": {}}), NAMES.map(lambda n: {"compile": {"backend": n}}))
PROPERTY = settings(max_examples=300, deadline=None)
_FILES = tempfile.TemporaryDirectory(prefix="resolver-properties-")


def ds_ref(content: dict | None) -> DsConfigRef | None:
    if content is None:
        return None
    path = Path(_FILES.name) / f"ds-{abs(hash(json.dumps(content, sort_keys=True)))}.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return DsConfigRef(str(path), "--ds-config")


def environ(value: str | None) -> dict[str, str]:
    return {} if value is None else {BACKEND_VAR: value}


def expected(cli, process, file, ds, ref):
    """The first level that gives a value, as docs/CONTRACT.md section 2 lists them: (name, source)."""
    levels = [
        (cli, "--compile-backend"),
        (process if process is not None and process.strip() else None, BACKEND_VAR),
        (file if file is not None and file.strip() else None, f"{BACKEND_VAR} in .env"),
        ((ds or {}).get("compile", {}).get("backend"), f"ds_config {ref.path}" if ref else ""),
    ]
    for value, source in levels:
        if value is not None:
            return (DEFAULT if value == ACCELERATOR_KEYWORD else value), source, value
    return DEFAULT, DEFAULT_SOURCE, DEFAULT


@PROPERTY
@given(cli=st.one_of(st.none(), NAMES), process=ENV_LEVEL, file=ENV_LEVEL, ds=DS_LEVEL)
def test_any_mix_of_levels_gives_the_first_set_level_with_its_source(cli, process, file, ds):
    ref = ds_ref(ds)
    calls = []

    def default() -> str:
        calls.append(1)
        return DEFAULT

    resolved = resolve_backend(cli, environ(process), environ(file), ref, default)

    name, source, requested = expected(cli, process, file, ds, ref)
    assert (resolved.name, resolved.source, resolved.requested) == (name, source, requested)
    assert (resolved.source in {"--compile-backend", BACKEND_VAR, f"{BACKEND_VAR} in .env", DEFAULT_SOURCE}
            or resolved.source.startswith("ds_config "))
    # The default is asked for only when it is the answer: the keyword, or no level set.
    assert bool(calls) == (resolved.name == DEFAULT and requested in {ACCELERATOR_KEYWORD, DEFAULT})


@PROPERTY
@given(level=st.sampled_from(["cli", "process", "file", "ds"]), others=st.lists(NAMES, min_size=3, max_size=3))
def test_accelerator_at_any_level_gives_the_default_and_stops_the_search(level, others):
    """`accelerator` at one level, other names at every lower level, nothing above: the default wins."""
    order = ["cli", "process", "file", "ds"]
    below = dict(zip(order[order.index(level) + 1:], others))
    value = {name: ACCELERATOR_KEYWORD if name == level else below.get(name) for name in order}
    ref = ds_ref(None if value["ds"] is None else {"compile": {"backend": value["ds"]}})

    resolved = resolve_backend(value["cli"], environ(value["process"]), environ(value["file"]), ref, lambda: DEFAULT)

    sources = {"cli": "--compile-backend", "process": BACKEND_VAR, "file": f"{BACKEND_VAR} in .env",
               "ds": f"ds_config {ref and ref.path}"}
    assert (resolved.name, resolved.source, resolved.requested) == (DEFAULT, sources[level], ACCELERATOR_KEYWORD)


@PROPERTY
@given(blank=BLANK, lower=ENV_LEVEL)
def test_a_blank_flag_is_a_usage_error_whatever_else_is_set(blank, lower):
    with pytest.raises(UsageError, match="--compile-backend"):
        resolve_backend(blank, environ(lower), {}, None, lambda: DEFAULT)


@PROPERTY
@given(cli=st.one_of(st.none(), NAMES), backend=st.one_of(BLANK, st.integers(), st.booleans(), st.lists(st.text())))
def test_a_named_ds_config_with_a_bad_backend_is_an_error_even_when_a_higher_level_wins(cli, backend):
    ref = ds_ref({"compile": {"backend": backend}})

    with pytest.raises(DsConfigError, match="compile.backend"):
        resolve_backend(cli, {}, {}, ref, lambda: DEFAULT)
