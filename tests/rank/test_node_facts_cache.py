"""The launcher's torch-free fast path: the backend cache and detection from torch's files."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accelerators import backends, detect_accelerator
from accelerators.cpu import CPUAccelerator
from accelerators.cuda import CUDAAccelerator
from accelerators.detect import detect_from_build
from accelerators.torch_build import TorchBuild, torch_build
from launcher.rank import node_facts_cache as facts_cache
from launcher.node.node_check import accelerator_facts
from tests.lock_holder import lock_held_elsewhere

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose cache lives in a fresh temp dir, with no ACCEL_* settings of the developer's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCEL_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each real walk of dynamo's registry made for the backend list (the walk itself stays real)."""
    seen: list[str] = []
    real = backends.registered_backends

    def spy() -> tuple[str, ...]:
        seen.append("walk")
        return real()

    monkeypatch.setattr(backends, "registered_backends", spy)
    return seen


def cache_files(env: dict[str, str]) -> list[Path]:
    return sorted(facts_cache.cache_dir(env).glob("backends-*.json"))


def add_entry_point(root: Path, name: str) -> None:
    """A tiny installed distribution under `root` that registers dynamo backend `name`."""
    info = root / f"fake_{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[torch_dynamo_backends]\n{name} = fake_{name}:compile\n")


def test_a_second_launch_takes_the_backend_list_from_the_cache(cache_env, walks):
    first = accelerator_facts(cache_env)
    second = accelerator_facts(cache_env)
    assert len(walks) == 1
    assert second == first
    assert len(cache_files(cache_env)) == 1


def test_facts_from_the_cache_equal_the_facts_computed_for_real(cache_env):
    accelerator_facts(cache_env)  # fills the cache
    cached = accelerator_facts(cache_env)
    real = accelerator_facts({**cache_env, facts_cache.NO_CACHE_VAR: "1"})
    assert cached == real
    cls, how = detect_accelerator(cache_env)
    assert (cached.name, cached.detected_by) == (cls.name, how)
    assert cached.supported_backends == cls().supported_compile_backends()


def test_the_cache_file_is_private_and_names_its_key(cache_env):
    accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["key"]["accelerator"] == "cpu"


def test_a_corrupt_cache_file_is_ignored_and_rebuilt(cache_env, walks):
    expected = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    path.write_text('{"key": {"format": 1}, "supported_backends": [')
    assert accelerator_facts(cache_env) == expected
    assert len(walks) == 2
    assert json.loads(path.read_text())["supported_backends"] == list(expected.supported_backends)


@pytest.mark.parametrize("backends", ["[]", "[[[]]]", '"inductor"', '[1, 2]', "null"])
def test_a_cache_file_of_the_right_key_but_another_shape_is_ignored_and_rebuilt(cache_env, walks, backends):
    expected = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    key = json.loads(path.read_text())["key"]
    path.write_text(f'{{"key": {json.dumps(key)}, "supported_backends": {backends}}}')
    assert accelerator_facts(cache_env) == expected
    assert len(walks) == 2
    assert json.loads(path.read_text())["supported_backends"] == list(expected.supported_backends)


def test_a_cache_file_for_another_key_is_not_used(cache_env, walks):
    facts = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    data = json.loads(path.read_text())
    data["key"]["torch"] = "0.0.0"
    data["supported_backends"] = ["planted"]
    path.write_text(json.dumps(data))
    assert accelerator_facts(cache_env).supported_backends == facts.supported_backends
    assert len(walks) == 2


PLANTED = "planted_backend"
NOBODY = 65534


def poison(path: Path, at: Path | None = None) -> Path:
    """Write the cache file's content, with an unregistered backend added, at `at` (default: in place)."""
    data = json.loads(path.read_text())
    data["supported_backends"].append(PLANTED)
    (at or path).write_text(json.dumps(data))
    return at or path


def another_users(path: Path) -> Path:
    os.chown(poison(path), NOBODY, NOBODY)
    return path


def of_mode(mode: int):
    return lambda path: poison(path).chmod(mode) or path


def a_symlink(path: Path) -> Path:
    elsewhere = poison(path, path.parent.parent / "elsewhere.json")
    elsewhere.chmod(0o600)
    path.unlink()
    path.symlink_to(elsewhere)
    return elsewhere


def in_a_symlinked_folder(path: Path) -> Path:
    poison(path)
    moved = shutil.move(path.parent, path.parent.with_name("elsewhere"))
    path.parent.symlink_to(moved)
    return Path(moved) / path.name


def in_a_group_writable_folder(path: Path) -> Path:
    poison(path).parent.chmod(0o770)
    return path


# name: (how the cache is planted, returning the file that holds the planted backend; is the file rebuilt)
UNTRUSTED = {
    "a cache file of another user": (another_users, True),
    "a cache file of mode 0666": (of_mode(0o666), True),
    "a cache file of mode 0620": (of_mode(0o620), True),
    "a cache file that is a symlink": (a_symlink, True),
    "a cache folder that is a symlink": (in_a_symlinked_folder, False),
    "a group-writable cache folder": (in_a_group_writable_folder, False),
}


@pytest.mark.parametrize("case", UNTRUSTED)
def test_a_cache_that_is_not_the_users_own_is_never_trusted(cache_env, walks, case):
    plant, rebuilt = UNTRUSTED[case]
    facts = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    planted = plant(path)
    planted_text = planted.read_text()

    assert PLANTED not in accelerator_facts(cache_env).supported_backends
    assert accelerator_facts(cache_env).supported_backends == facts.supported_backends
    assert len(walks) == (2 if rebuilt else 3)  # rebuilt once; an untrusted folder is never used
    if rebuilt:
        info = os.lstat(path)
        assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o600
        assert PLANTED not in path.read_text()
    if planted != path or not rebuilt:
        assert planted.read_text() == planted_text  # nothing written through a link or into a folder not trusted


def plant_lock(kind: str, lock: Path, target: Path) -> None:
    if kind == "a dangling symlink":
        lock.symlink_to(target)
    elif kind == "a symlink to a file":
        target.write_text("kept")
        lock.symlink_to(target)
    elif kind == "another user's file":
        lock.write_text("")
        os.chown(lock, NOBODY, NOBODY)
    else:
        os.mkfifo(lock)


@pytest.mark.timeout(20)  # a FIFO as the lock must not block
@pytest.mark.parametrize("kind", ["a dangling symlink", "a symlink to a file", "another user's file", "a FIFO"])
def test_a_lock_that_is_not_the_users_own_file_is_not_used_and_nothing_is_made_through_it(cache_env, walks,
                                                                                          tmp_path, kind):
    facts = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    lock, target = path.with_suffix(".lock"), tmp_path / "target"
    path.unlink()
    lock.unlink()
    plant_lock(kind, lock, target)

    assert accelerator_facts(cache_env) == facts
    assert len(walks) == 2 and cache_files(cache_env) == [path]  # computed and stored without the lock
    assert (target.read_text() == "kept") if kind == "a symlink to a file" else not target.exists()
    assert not stat.S_ISREG(os.lstat(lock).st_mode) or os.lstat(lock).st_uid == NOBODY  # left as planted


def test_a_new_dynamo_entry_point_changes_the_key(cache_env, walks, tmp_path, monkeypatch):
    accelerator_facts(cache_env)
    before = facts_cache.cache_key("cpu", None)
    add_entry_point(tmp_path / "site", "my_backend")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    after = facts_cache.cache_key("cpu", None)
    assert ["my_backend", "fake_my_backend:compile"] in after["entry_points"]
    assert after != before
    accelerator_facts(cache_env)
    assert len(walks) == 2
    assert len(cache_files(cache_env)) == 2


def test_no_cache_variable_turns_the_cache_off(cache_env, walks):
    env = {**cache_env, facts_cache.NO_CACHE_VAR: "1"}
    accelerator_facts(env)
    accelerator_facts(env)
    assert len(walks) == 2
    assert cache_files(env) == []


def test_an_unwritable_cache_dir_costs_only_the_cache(cache_env, tmp_path, walks):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    env = {**cache_env, "XDG_CACHE_HOME": str(blocker)}
    assert accelerator_facts(env).supported_backends
    assert len(walks) == 1


@pytest.mark.slow
def test_the_launcher_refuses_a_backend_without_importing_torch(cache_env, tmp_path):
    (tmp_path / "train.py").write_text("print('never runs')\n")
    # The command itself, in a fresh interpreter: a refusal ends it (exit 2) before torch could be imported.
    probe = textwrap.dedent(
        """
        import sys
        from launcher.cli.command import accel_launch

        try:
            accel_launch.main(["--compile-backend", "bogus", "--nproc-per-node", "4", "train.py"],
                              prog_name="accel-launch")
        except SystemExit as exc:
            print("exit:", exc.code)
        print("torch imported:", "torch" in sys.modules)
        """
    )
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-c", probe], cwd=tmp_path, env={**cache_env, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120,
    )
    run()  # the first launch on this install fills the cache
    done = run()
    assert "exit: 2" in done.stdout, done.stderr
    assert done.stderr.startswith("accel-launch: error: compile backend 'bogus' (from --compile-backend)"), done.stderr
    assert "torch imported: False" in done.stdout


def test_torch_free_detection_agrees_with_the_real_one_here(cache_env):
    found = detect_from_build(cache_env, torch_build())
    if found is None:
        pytest.skip("this torch install cannot be judged from its files")
    cls, how = detect_accelerator(cache_env)
    assert found == (cls, how)


def test_an_accelerator_override_is_left_to_the_real_detection(cache_env):
    assert detect_from_build({**cache_env, "ACCEL_ACCELERATOR": "cpu"}, torch_build()) is None


@pytest.mark.parametrize(
    ("fields", "libraries", "ruled_out"),
    [
        ({"cuda": None, "hip": None}, (), True),
        ({"cuda": "12.4", "hip": None}, (), False),
        ({"cuda": None, "hip": "6.2"}, (), False),
        ({"cuda": None}, (), False),
        ({"cuda": None, "hip": None}, ("libtorch_cuda.so",), False),
    ],
)
def test_cuda_is_ruled_out_only_when_torch_files_say_so(fields, libraries, ruled_out):
    assert CUDAAccelerator.ruled_out(TorchBuild("/nowhere", fields, libraries)) is ruled_out


def test_an_accelerator_without_a_package_or_build_rule_is_never_ruled_out():
    assert CPUAccelerator.ruled_out(TorchBuild("/nowhere", {}, ())) is False


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_lock_another_process_keeps_holding_delays_the_list_only_by_the_bounded_wait(cache_env, walks,
                                                                                      monkeypatch):
    monkeypatch.setattr(facts_cache, "LOCK_WAIT_SECONDS", 1.0)  # the bound, not its 10 s, is the point
    facts = accelerator_facts(cache_env)
    [path] = cache_files(cache_env)
    path.unlink()

    with lock_held_elsewhere(path.with_suffix(".lock")):
        started = time.monotonic()
        again = accelerator_facts(cache_env)
        waited = time.monotonic() - started

    assert again == facts
    assert len(walks) == 2 and cache_files(cache_env) == [path]  # walked here, and stored for the next
    assert facts_cache.LOCK_WAIT_SECONDS <= waited < facts_cache.LOCK_WAIT_SECONDS + 20
