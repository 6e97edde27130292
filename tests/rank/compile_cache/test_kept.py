"""What compile once keeps beyond one launch, at its seams, in-process: the per-user key and where the launcher
uses it, the compile folder's trust and its full-disk rule, the folder in front of the job's store, the check
that the nodes sign with one key (on a real TCPStore), and the compile workers each rank gets."""

from __future__ import annotations

import errno
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from torch._inductor.remote_cache import RemoteCacheBackend, cache_stats
from torch.distributed import TCPStore

from launcher.contract.job_config import JobConfig
from launcher.contract.program import Program
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.job import compile_keep
from launcher.job.compile_keep import keep_environment, user_key
from launcher.node.node_env import node_environment
from launcher.rank.compile_cache import kept_share
from launcher.rank.compile_cache.job_share import JobShare
from launcher.rank.compile_cache.graph_cache import torch_backend
from launcher.rank.compile_cache.kept_share import AutogradEntries, KeptShare, PgoState, check_same_key, open_folder
from tests.launches import RECORD_RANK, CliRunnerFn

CPUS = len(os.sched_getaffinity(0))
NOBODY = 65534


def job(nnodes: str) -> JobConfig:
    return JobConfig(program=Program("script", "train.py", ()), nnodes=nnodes, nproc_per_node=2, rdzv_endpoint="h:1",
                     backend=ResolvedBackend("inductor", "accelerator default", "inductor"))


def test_the_user_key_is_made_once_private_and_the_same_for_every_node_of_one_home(tmp_path: Path) -> None:
    path = tmp_path / "config" / "accel-launch" / "compile-key"
    first, problem = user_key(str(path))
    assert first is not None and problem == "" and len(first) == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert user_key(str(path)) == (first, "")  # another node of the same home reads the same key
    assert not [name for name in os.listdir(path.parent) if name != "compile-key"]  # no temporary file left


@pytest.mark.parametrize("spoil", ["readable", "foreign", "link"])
def test_a_key_another_user_could_read_or_write_is_not_used(tmp_path: Path, spoil: str) -> None:
    path = tmp_path / "compile-key"
    assert user_key(str(path))[0] is not None
    if spoil == "readable":
        path.chmod(0o644)
    elif spoil == "foreign":
        os.chown(path, NOBODY, -1)
    else:
        path.rename(tmp_path / "elsewhere")
        path.symlink_to(tmp_path / "elsewhere")
    key, problem = user_key(str(path))
    assert key is None and {"readable": "read by group or others", "foreign": f"uid {NOBODY}",
                            "link": "symbolic link"}[spoil] in problem


def test_nodes_started_one_by_one_sign_with_the_users_key_and_a_hostfiles_head_makes_one_per_launch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    environ: dict[str, str] = {}
    env, notes = keep_environment("job", None, environ, job("2"), own_node=True)
    key = (tmp_path / "accel-launch" / "compile-key").read_text().strip()
    assert env == {"ACCEL_COMPILE_CACHE_SECRET": key, "ACCEL_COMPILE_KEY_FILE": str(tmp_path / "accel-launch" /
                                                                                   "compile-key")} and notes == ()
    assert keep_environment("job", None, environ, job("2"), own_node=False) == ({}, ())  # the head sends its own
    assert keep_environment("job", None, environ, job("1"), own_node=True) == ({}, ())  # one node: no key needed
    assert keep_environment("node", None, environ, job("2"), own_node=True) == ({}, ())
    given = {**environ, "ACCEL_COMPILE_CACHE_SECRET": "x" * 16}
    assert keep_environment("job", None, given, job("2"), own_node=True) == ({}, ())  # the user's secret wins
    (tmp_path / "accel-launch" / "compile-key").chmod(0o640)
    env, notes = keep_environment("job", None, environ, job("2"), own_node=True)
    assert env == {} and len(notes) == 1 and "ACCEL_COMPILE_CACHE_SECRET on every node" in notes[0]


def test_a_compile_folder_others_can_write_is_not_used_and_the_plan_says_so(cli: CliRunnerFn, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env, notes = keep_environment("job", None, {"ACCEL_COMPILE_CACHE_DIR": str(shared)}, job("1"), own_node=True)
    assert env == {"ACCEL_COMPILE_CACHE_DIR": ""}  # the ranks use none, not even the user's variable
    assert notes == (f"the compile folder {shared} (ACCEL_COMPILE_CACHE_DIR) is writable by group or others (mode "
                     "0777): it is not used",)
    assert open_folder(str(shared))[0] is None
    kept = tmp_path / "kept"
    result = cli(["--dry-run", "--compile-cache-dir", str(kept), "--nproc-per-node", "2", str(RECORD_RANK)],
                 env={"ACCEL_COMPILE_CACHE_DIR": str(shared)})  # the flag wins
    assert result.status == 0, result.stderr
    assert result.row("compile folder").startswith(f"{kept} (made by the first rank that writes): each graph")
    assert not kept.exists()  # a dry run makes nothing
    off = keep_environment("off", str(kept), {}, job("1"), own_node=True)
    assert off == ({"ACCEL_COMPILE_CACHE_DIR": ""}, ())  # --compile-cache off keeps nothing


def test_the_folder_keeps_whole_files_reads_only_the_users_own_and_stops_writing_when_full(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder, problem = open_folder(str(tmp_path / "kept"))
    assert folder is not None and problem == ""
    assert stat.S_IMODE((tmp_path / "kept").stat().st_mode) == 0o700
    folder.write("graph", b"entry")
    assert folder.read("graph") == b"entry" and folder.read("other") is None
    (entry,) = (tmp_path / "kept" / "v1").iterdir()
    entry.chmod(0o620)
    assert folder.read("graph") is None  # another could have written it
    entry.chmod(0o600)
    os.chown(entry, NOBODY, -1)
    assert folder.read("graph") is None

    def full(path: object, data: object) -> None:  # the seam: this machine's disk is not full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kept_share, "publish_file", full)
    folder.write("a", b"1")
    folder.write("b", b"2")
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "cannot be written (No space left on device)" in said[0]


@pytest.fixture
def store() -> TCPStore:
    return TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False)


def test_the_folder_is_read_before_the_job_and_what_a_rank_compiled_goes_to_both(store: TCPStore,
                                                                               tmp_path: Path) -> None:
    folder = open_folder(str(tmp_path / "kept"))[0]
    job = JobShare(store, b"the job's secret", "0", "host 1", lambda claimer: True)
    kept = KeptShare(folder, job)
    kept.publish("graph", b"compiled")
    assert folder.read("graph") == b"compiled" and job.fetch("graph") == b"compiled"
    folder.write("only-kept", b"from an earlier job")
    assert kept.fetch("only-kept") == b"from an earlier job"
    alone = KeptShare(folder, None)  # one node: every claim is this rank's, the node's lock keeps it one
    assert alone.claim("new") is None and alone.fetch("new") is None
    entries = torch_backend(AutogradEntries, RemoteCacheBackend)(lambda: alone)  # as torch is handed it
    entries.put("aot", b"first")
    entries.put("aot", b"second")
    assert entries.get("aot") == b"first"  # every rank writes its AOTAutograd entry: one is kept
    state = torch_backend(PgoState, RemoteCacheBackend)(lambda: alone)
    state.put("pgo", b"first")
    state.put("pgo", b"second")
    assert state.get("pgo") == b"second"
    assert (cache_stats._stats["backend:AutogradEntries"].put, cache_stats._stats["backend:PgoState"].hit) == (2, 1)


def test_nodes_with_other_keys_say_so_once_and_share_nothing(store: TCPStore,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert check_same_key(store, b"key of the first home", "/home/a/.config/accel-launch/compile-key")
    assert check_same_key(store, b"key of the first home", None)
    assert capsys.readouterr().err == ""
    assert not check_same_key(store, b"key of another home", "/home/b/.config/accel-launch/compile-key")
    assert not check_same_key(store, b"a third", None)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "the key in /home/b/.config/accel-launch/compile-key" in said[0]
    assert "set the same ACCEL_COMPILE_CACHE_SECRET on every node" in said[0]


def test_under_compile_once_each_rank_gets_the_nodes_cpus_to_compile_else_its_share() -> None:
    assert node_environment("cpu", 2, {}, 2, compile_once=True)["TORCHINDUCTOR_COMPILE_THREADS"] == str(CPUS)
    assert node_environment("cpu", 2, {}, 2)["TORCHINDUCTOR_COMPILE_THREADS"] == str(max(1, CPUS // 2))
    users = {"TORCHINDUCTOR_COMPILE_THREADS": "7"}
    assert "TORCHINDUCTOR_COMPILE_THREADS" not in node_environment("cpu", 2, users, 2, compile_once=True)
    assert "TORCHINDUCTOR_COMPILE_THREADS" not in node_environment("cpu", 1, {}, 2, compile_once=True)
    assert compile_keep.compile_threads_text({"TORCHINDUCTOR_COMPILE_THREADS": "2", "ACCEL_COMPILE_CACHE": "off"},
                                             {}).startswith("; TORCHINDUCTOR_COMPILE_THREADS=2, each rank's share")


def test_a_kept_entry_cut_short_or_changed_on_disk_is_a_miss(tmp_path):
    folder, problem = open_folder(str(tmp_path / "kept"))
    assert folder is not None, problem
    folder.write("graph", b"compiled graph")
    (entry,) = (tmp_path / "kept" / "v1").iterdir()
    whole = entry.read_bytes()
    assert folder.read("graph") == b"compiled graph"
    entry.write_bytes(whole[:-3])
    assert folder.read("graph") is None
    entry.write_bytes(whole[:-1] + b"X")
    assert folder.read("graph") is None
