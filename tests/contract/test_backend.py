"""The resolved backend's one type: its environment and claim forms give it back, and one judgement words
every refusal with where the backend came from."""

from __future__ import annotations

import pytest

from launcher.contract.resolved_backend import CLAIM_KEYS, BackendClaim, ResolvedBackend, backend_refusal
from launcher.contract.job_config import JobConfig
from launcher.contract.job_json import job_from_json, job_to_json
from launcher.contract.program import Program
from launcher.node.node_plan import plan_node
from launcher.contract.names import BACKEND_SOURCE_VAR, BACKEND_VAR

BACKEND = ResolvedBackend(name="eager", source="--compile-backend", requested="accelerator")


def test_a_rank_reads_back_the_name_and_source_its_environment_carries() -> None:
    read = ResolvedBackend.from_environment(BACKEND.environment())
    assert (read.name, read.source) == (BACKEND.name, BACKEND.source)
    assert BACKEND.environment() == {BACKEND_VAR: "eager", BACKEND_SOURCE_VAR: "--compile-backend"}


def test_a_claim_made_from_the_rendezvous_options_names_the_backend_its_source_host_and_device() -> None:
    options = BACKEND.rendezvous_options("node-a", "cpu")
    assert tuple(options) == CLAIM_KEYS
    assert BackendClaim(*(options[key] for key in CLAIM_KEYS)) == BackendClaim("eager", "--compile-backend", "node-a",
                                                                               "cpu")


def test_the_job_holds_the_backend_once_and_keeps_what_was_requested_on_its_way_to_a_node() -> None:
    job = JobConfig(program=Program("script", "train.py"), backend=BACKEND, nproc_per_node=1)
    assert BACKEND_VAR not in job.job_env and plan_node(job, "cpu", 0, {}).rank_env[BACKEND_VAR] == "eager"
    assert job_from_json(job_to_json(job)).backend.requested == "accelerator"


@pytest.mark.parametrize("name, problem, refused", [
    ("eager", None, None),
    ("eagre", None, "compile backend 'eagre' (from --compile-backend) is not supported on cpu"),
    (" eager", None, "the name has surrounding whitespace"),
    ("pkg.mod:fn", None, None),
    ("pkg.mod:fn", "no module named 'pkg'", "no module named 'pkg'"),
])
def test_one_judgement_accepts_a_supported_name_and_words_a_refusal_with_its_source(
        name: str, problem: str | None, refused: str | None) -> None:
    backend = ResolvedBackend(name=name, source="--compile-backend", requested=name)
    reason = backend_refusal(backend, "cpu", ("eager", "inductor"), lambda path: problem)
    assert reason is None if refused is None else refused in reason and "(from --compile-backend)" in reason
