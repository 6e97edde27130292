"""The one-line refusal: backend, source, device, reason, the supported list, and a did-you-mean."""

from __future__ import annotations

import pytest

from accelerators import UnsupportedBackendError, explain_unsupported

SUPPORTED = ("aot_eager", "eager", "inductor")

SUGGESTIONS = [
    # given, suggested (None: no suggestion)
    ("indcutor", "inductor"),
    ("Inductor", "inductor"),
    ("INDUCTOR", "inductor"),
    (" inductor ", "inductor"),
    ("\u0456nductor", "inductor"),
    ("eagre", "eager"),
    ("aot-eager", "aot_eager"),
    ("zzzz", None),
    ("x" * 10_000, None),
]


def test_the_message_names_backend_source_device_reason_list_and_suggestion(cpu) -> None:
    with pytest.raises(UnsupportedBackendError) as caught:
        cpu.set_compile_backend("indcutor")
    err = caught.value.with_source("--compile-backend")
    text = str(err)
    assert text.startswith(
        "compile backend 'indcutor' (from --compile-backend) is not supported on cpu: "
        "not a registered dynamo backend; supported: "
    )
    assert ", ".join(cpu.supported_compile_backends()) in text
    assert text.endswith("; did you mean 'inductor'?")


def test_without_a_source_the_message_has_no_parenthesis() -> None:
    err = explain_unsupported("indcutor", "cpu", SUPPORTED)
    assert str(err) == (
        "compile backend 'indcutor' is not supported on cpu: not a registered dynamo backend; "
        "supported: aot_eager, eager, inductor; did you mean 'inductor'?"
    )


def test_with_source_keeps_every_fact_and_adds_the_source() -> None:
    err = explain_unsupported("tvm", "cpu", SUPPORTED)
    sourced = err.with_source("ACCEL_COMPILE_BACKEND")
    facts = ("backend", "device", "supported", "reason")
    assert [getattr(sourced, f) for f in facts] == [getattr(err, f) for f in facts]
    assert (err.source, sourced.source) == (None, "ACCEL_COMPILE_BACKEND")
    assert "(from ACCEL_COMPILE_BACKEND)" in str(sourced)


@pytest.mark.parametrize(("given", "suggested"), SUGGESTIONS, ids=lambda v: repr(v)[:20])
def test_the_suggestion_is_the_closest_supported_name_ignoring_case(given: str, suggested: str | None) -> None:
    err = explain_unsupported(given, "cuda", SUPPORTED)
    assert err.suggestion == suggested
    assert ("did you mean" in str(err)) == (suggested is not None)


def test_a_very_long_name_is_shortened_in_the_message() -> None:
    text = str(explain_unsupported("x" * 10_000, "cpu", SUPPORTED))
    assert "(10000 characters)" in text
    assert len(text) < 300


@pytest.mark.parametrize("name", ["eager", "indcutor", "", "  ", " eager", "cudagraphs", "tvm", "\u0456nductor"])
def test_explain_unsupported_and_set_compile_backend_agree_on_names(cpu, name: str) -> None:
    verdict = explain_unsupported(name, "cpu", cpu.supported_compile_backends())
    try:
        cpu.set_compile_backend(name)
        refused = None
    except UnsupportedBackendError as err:
        refused = err
    assert (verdict is None) == (refused is None)
    if refused is not None:
        assert str(refused) == str(verdict)
