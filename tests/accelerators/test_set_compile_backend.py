"""set_compile_backend with every kind of good and bad value, on a real CPU accelerator and dynamo's real registry."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelerators import UnsupportedBackendError

USER_MODULES = {
    "accel_user_backends.py": (
        "def my_backend(gm, example_inputs):\n    return gm.forward\n\n"
        "class Holder:\n    @staticmethod\n    def backend(gm, example_inputs):\n        return gm.forward\n\n"
        "NOT_CALLABLE = 42\n"
    ),
    "accel_broken_backend.py": "raise RuntimeError('boom at import')\n",
    "accel_missing_dep.py": "import accel_no_such_dependency\n",
}


@pytest.fixture
def user_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder of small backend modules on sys.path, forgotten again afterwards."""
    for name, text in USER_MODULES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in USER_MODULES:
        sys.modules.pop(name.removesuffix(".py"), None)


def a_callable_backend(gm, example_inputs):
    """A backend given as a Python callable."""
    return gm.forward


GOOD_NAMES = ["eager", "inductor", "aot_eager"]

GOOD_PATHS = [
    ("accel_user_backends:my_backend", "my_backend"),
    ("accel_user_backends.my_backend", "my_backend"),
    ("accel_user_backends:Holder.backend", "backend"),
]

BAD_VALUES = [
    # value, words the reason must contain
    (None, "got None"),
    (3, "got int"),
    (["eager"], "got list"),
    ("", "the name is blank"),
    ("   ", "the name is blank"),
    ("indcutor", "not a registered dynamo backend"),
    ("Inductor", "not a registered dynamo backend"),
    ("EAGER", "not a registered dynamo backend"),
    (" inductor", "surrounding whitespace"),
    ("inductor\n", "surrounding whitespace"),
    ("\u0456nductor", "U+0456"),
    ("x" * 10_000, "not a registered dynamo backend"),
    ("cudagraphs", "runs only on cuda"),
    ("hpu_backend", "runs only on hpu"),
    ("relu_compile_error_TESTING_ONLY", "testing-only"),
    ("dynamo_minifier_backend", "minifier"),
    ("accel_broken_backend:anything", "raised RuntimeError on import: boom at import"),
    ("accel_missing_dep:anything", "raised ModuleNotFoundError on import"),
    ("accel_user_backends:NOT_CALLABLE", "is a int, not a callable"),
    ("accel_user_backends:nope", "has no attribute 'nope'"),
    ("accel_no_such_module:fn", "module 'accel_no_such_module' not found"),
    ("accel_no_such_pkg.mod.fn", "module 'accel_no_such_pkg' not found"),
    ("accel_user_backends:", "not a valid import path"),
]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_registered_name_is_stored_as_given(cpu, name: str) -> None:
    cpu.set_compile_backend(name)
    assert cpu.get_compile_backend() == name
    assert cpu.resolved_compile_backend() == name


def test_a_callable_is_stored_and_resolves_to_itself(cpu) -> None:
    cpu.set_compile_backend(a_callable_backend)
    assert cpu.get_compile_backend() is a_callable_backend
    assert cpu.resolved_compile_backend() is a_callable_backend


@pytest.mark.parametrize(("path", "function_name"), GOOD_PATHS)
def test_an_import_path_is_stored_as_text_and_resolves_to_the_callable(cpu, user_modules, path, function_name) -> None:
    cpu.set_compile_backend(path)
    assert cpu.get_compile_backend() == path
    assert cpu.resolved_compile_backend().__name__ == function_name


@pytest.mark.parametrize(("value", "reason"), BAD_VALUES, ids=lambda v: repr(v)[:30])
def test_a_bad_value_is_refused_with_its_reason_and_leaves_the_backend_as_it_was(cpu, user_modules, value, reason) -> None:
    cpu.set_compile_backend("eager")
    with pytest.raises(UnsupportedBackendError) as caught:
        cpu.set_compile_backend(value)
    assert isinstance(caught.value, ValueError)
    assert reason in caught.value.reason
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 2_000
    assert cpu.get_compile_backend() == "eager"


MISSING_PACKAGES = [
    pytest.param(backend, package, marks=pytest.mark.skipif(importlib.util.find_spec(package) is not None, reason="installed"))
    for backend, package in [("tvm", "tvm"), ("openxla", "torch_xla"), ("openxla_eval", "torch_xla")]
]


@pytest.mark.parametrize(("package_backend", "package"), MISSING_PACKAGES)
def test_a_backend_whose_package_is_missing_is_refused_naming_the_package(cpu, package_backend, package) -> None:
    with pytest.raises(UnsupportedBackendError, match=f"needs the package '{package}', which is not installed"):
        cpu.set_compile_backend(package_backend)
