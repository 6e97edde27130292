"""The parts of compile-once at their seams, in-process: the job's signed copies on a real TCPStore, the node's
locks between real processes, the kernels' places, and the launcher's compile environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from torch.distributed import TCPStore

from launcher.contract.job_config import JobConfig
from launcher.contract.names import COMPILE_STORE_SECONDS
from launcher.contract.program import Program
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.errors import UsageError
from launcher.job.rank_defaults import compile_cache_text, compile_environment
from launcher.rank.compile_cache.graph_cache import GraphCache
from launcher.rank.compile_cache.job_share import CHUNK_BYTES, JobShare
from launcher.rank.compile_cache.kernels import KernelFiles
from launcher.rank.compile_cache.node_share import NodeShare, private_folder
from launcher.rank.compile_cache.probes import ProbeLibraries
from tests.launches import RECORD_RANK, CliRunnerFn


@pytest.fixture
def store() -> TCPStore:
    return TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False)


def share(store: TCPStore, secret: bytes = b"the job's secret", attempt: str = "0", member: str = "host 1") -> JobShare:
    return JobShare(store, secret, attempt, member, lambda claimer: True)


def test_a_copy_larger_than_the_stores_limit_travels_in_chunks(store: TCPStore) -> None:
    payload = os.urandom(2 * CHUNK_BYTES + 5)
    share(store).publish("graph", payload)
    assert share(store).fetch("graph") == payload


def test_a_large_entry_crosses_the_jobs_store_well_within_the_bound_of_a_call(store: TCPStore) -> None:
    """One store call a chunk (launcher/rank/compile_cache/job_share.py): one multi_set or multi_get of a 20 MiB
    entry's chunks takes torch's default server 6 to 10 s, near COMPILE_STORE_SECONDS."""
    payload = os.urandom(20 << 20)
    started = time.monotonic()
    share(store).publish("graph", payload)
    assert share(store).fetch("graph") == payload
    assert time.monotonic() - started < COMPILE_STORE_SECONDS / 5


def test_an_entry_planted_by_someone_without_the_secret_is_never_loaded(store: TCPStore) -> None:
    share(store, secret=b"a stranger's guess").publish("graph", b"malicious pickle")
    assert share(store).fetch("graph") is None
    share(store).publish("graph", b"the real graph")
    stranger = TCPStore("127.0.0.1", store.port, is_master=False, timeout=timedelta(seconds=10))
    # The stranger overwrites a chunk of the real copy in place: the signature no longer checks.
    space = __import__("hashlib").sha256(b"the job's secret").hexdigest()[:16]
    stranger.set(f"accel-compile/{space}/value/graph/0", b"malicious pickle")
    assert share(store).fetch("graph") is None
    stranger.set(f"accel-compile/{space}/value/graph", "99999999 00")  # a header that claims too much
    assert share(store).fetch("graph") is None


def test_the_first_claim_wins_and_the_others_wait_for_its_copy(store: TCPStore) -> None:
    first, second = share(store), share(store, member="host 2")
    assert first.claim("graph") is None
    claimer = second.claim("graph")
    assert claimer == "host 1"
    first.publish("graph", b"compiled")
    assert second.wait_for("graph", claimer, seconds=5) == b"compiled"


def test_a_wait_ends_when_the_claimer_gives_up_dies_or_runs_past_the_bound(store: TCPStore) -> None:
    first = share(store)
    first.claim("a")
    first.give_up("a")
    started = time.monotonic()
    assert share(store).wait_for("a", "host 1", seconds=30) is None
    dead = JobShare(store, b"the job's secret", "0", "host 2", lambda claimer: False)
    assert dead.wait_for("b", "host 1", seconds=30) is None
    assert share(store).wait_for("c", "host 1", seconds=0.3) is None
    assert time.monotonic() - started < 5


def test_a_restart_never_waits_on_a_claim_of_the_attempt_before(store: TCPStore) -> None:
    share(store, attempt="0").claim("graph")
    assert share(store, attempt="1", member="host 2").claim("graph") is None


def test_a_rank_waits_for_the_node_lock_then_loads_the_nodes_copy(tmp_path: Path) -> None:
    folder = private_folder(tmp_path / "node")
    assert folder is not None
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "from launcher.rank.compile_cache.node_share import NodeShare; node = NodeShare(Path(sys.argv[2]));"
        "assert node.lock('graph', 5) == (True, False); print('held', flush=True); time.sleep(1);"
        "node.write('graph', b'from the compiling rank'); node.unlock('graph'); time.sleep(30)"),
        str(Path(__file__).resolve().parents[3]), str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        cache = GraphCache(NodeShare(folder), lambda: None, KernelFiles(tmp_path), wait_seconds=20)
        assert cache._find("graph") == b"from the compiling rank"  # waited for the lock, then loaded the copy
        assert not NodeShare(folder).lock("graph", 0)[1]  # ... and let go of the lock
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_whose_holder_died_is_free_at_once(tmp_path: Path) -> None:
    folder = private_folder(tmp_path / "node")
    subprocess.run([sys.executable, "-c", (
        "import sys, os; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "from launcher.rank.compile_cache.node_share import NodeShare;"
        "NodeShare(Path(sys.argv[2])).lock('graph', 5); os._exit(9)"),
        str(Path(__file__).resolve().parents[3]), str(folder)], check=False)
    started = time.monotonic()
    assert NodeShare(folder).lock("graph", 20)[0]
    assert time.monotonic() - started < 2


def test_a_node_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert private_folder(shared) is None
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert private_folder(tmp_path / "link") is None


def test_received_kernels_land_in_the_cache_folder_and_nowhere_else(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    KernelFiles(root).place({"ab/kernel.so": b"\x7fELF", "../escape.so": b"x", "/etc/evil.so": b"x", "": b"x"})
    assert (root / "ab" / "kernel.so").read_bytes() == b"\x7fELF"
    assert not (tmp_path / "escape.so").exists()
    compiled = KernelFiles(root)
    compiled.noting()
    compiled.loaded(str(root / "ab" / "kernel.so"))
    compiled.loaded("/usr/lib/libc.so.6")  # outside the cache folder: not ours to send
    assert compiled.taken() == {"ab/kernel.so": b"\x7fELF"}


def test_a_probe_library_is_built_by_one_node_and_received_signed_by_the_others(store: TCPStore,
                                                                                  tmp_path: Path) -> None:
    builder_share, receiver_share = share(store), share(store, member="host 2")
    builder, receiver = ProbeLibraries(lambda: builder_share), ProbeLibraries(lambda: receiver_share)
    built, received = tmp_path / "node-1" / "ab" / "cabc.so", tmp_path / "node-2" / "ab" / "cabc.so"
    for library in (built, received):
        library.parent.mkdir(parents=True)
    assert builder.obtain("cabc", built) is True  # claimed: this rank builds it
    built.write_bytes(b"\x7fELF the probe")
    builder.built("cabc", built)
    assert receiver.obtain("cabc", received) is False and received.read_bytes() == b"\x7fELF the probe"
    assert builder.obtain("cabc", built) is False  # a library already in the folder is torch's to check


def test_a_planted_probe_library_is_never_placed_and_a_failed_build_ends_the_wait(store: TCPStore,
                                                                                 tmp_path: Path) -> None:
    space = __import__("hashlib").sha256(b"the job's secret").hexdigest()[:16]
    store.set(f"accel-compile/{space}/value/isa-probe/cabc/0", b"\x7fELF planted")  # in the job's own place
    store.set(f"accel-compile/{space}/value/isa-probe/cabc", "1 " + "0" * 64)
    library = tmp_path / "cabc.so"
    first = ProbeLibraries(lambda: share(store))
    assert first.obtain("cabc", library) is True and not library.exists()  # the planted copy is a miss
    first.built("cabc", library)  # the build made nothing: the waiters are told at once
    started = time.monotonic()
    assert ProbeLibraries(lambda: share(store, member="host 2")).obtain("cabc", library) is False
    assert time.monotonic() - started < 5 and not library.exists()


def job(cwd: str = "/work") -> JobConfig:
    return JobConfig(program=Program("script", "train.py", ("--lr", "1")),
                     backend=ResolvedBackend("inductor", "accelerator default", "inductor"), nproc_per_node=2)


def test_the_compile_environment_keeps_the_users_values_and_names_the_job_alike() -> None:
    first = compile_environment(None, {}, job(), Path("/work"))
    again = compile_environment(None, {}, job(), Path("/work"))
    assert first["ACCEL_COMPILE_CACHE"] == "job"
    assert first["TORCH_COMPILE_JOB_ID"] == again["TORCH_COMPILE_JOB_ID"]  # a relaunch keeps torch's PGO state
    assert first["ACCEL_COMPILE_CACHE_SECRET"] != again["ACCEL_COMPILE_CACHE_SECRET"]  # a secret per launch
    assert compile_environment(None, {}, job(), Path("/other"))["TORCH_COMPILE_JOB_ID"] != first["TORCH_COMPILE_JOB_ID"]
    users = {"TORCH_COMPILE_JOB_ID": "mine", "ACCEL_COMPILE_CACHE_SECRET": "x" * 16, "ACCEL_COMPILE_CACHE": "node"}
    assert compile_environment(None, users, job(), Path("/work")) == {"ACCEL_COMPILE_CACHE": "node"}
    assert compile_environment("off", users, job(), Path("/work")) == {"ACCEL_COMPILE_CACHE": "off"}


def test_the_users_own_remote_cache_wins_and_the_plan_says_so() -> None:
    environ = {"TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE": "1"}
    env = compile_environment("job", environ, job(), Path("/work"))
    assert env["ACCEL_COMPILE_CACHE"] == "off" and "ACCEL_COMPILE_CACHE_SECRET" not in env
    assert "your own remote cache (TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1)" in compile_cache_text(env, environ, False)


def test_a_remote_cache_set_in_the_env_file_is_the_one_the_plan_names(cli: CliRunnerFn, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TORCHINDUCTOR_REDIS_URL=redis://cache:6379\n")
    result = cli(["--dry-run", "--nproc-per-node", "2", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("compile cache").startswith("off: your own remote cache (TORCHINDUCTOR_REDIS_URL=redis://cache:"
                                                  "6379) serves inductor;")
    assert ("environment", "ACCEL_COMPILE_CACHE=off") in result.plan()


@pytest.mark.parametrize(("env_file", "environ", "source"), [
    ("", {}, "made for this launch"),
    ("ACCEL_COMPILE_CACHE_SECRET=0123456789abcdefXYZ\n", {}, "from the env file's ACCEL_COMPILE_CACHE_SECRET, else "
     "made for this launch"),
    ("", {"ACCEL_COMPILE_CACHE_SECRET": "0123456789abcdefXYZ"}, "from ACCEL_COMPILE_CACHE_SECRET"),
], ids=["made", "env-file", "environment"])
def test_the_plan_says_where_the_jobs_secret_comes_from_and_never_shows_it(
        cli: CliRunnerFn, tmp_path: Path, env_file: str, environ: dict[str, str], source: str) -> None:
    if env_file:
        (tmp_path / ".env").write_text(env_file)
    result = cli(["--dry-run", "--nproc-per-node", "2", str(RECORD_RANK)], env=environ)
    assert result.status == 0, result.stderr
    assert f"secret {source};" in result.row("compile cache")
    assert "0123456789abcdef" not in result.stdout


@pytest.mark.parametrize("environ", [{"ACCEL_COMPILE_CACHE": "jobs"}, {"ACCEL_COMPILE_CACHE_SECRET": "short"}])
def test_a_bad_compile_cache_setting_names_the_variable(environ: dict[str, str]) -> None:
    with pytest.raises(UsageError) as caught:
        compile_environment(None, environ, job(), Path("/work"))
    assert caught.value.option in environ
    assert "short" not in str(caught.value)  # a secret is never printed
