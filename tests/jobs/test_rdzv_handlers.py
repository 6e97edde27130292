"""--rdzv-conf and --rdzv-backend as torchrun takes them: every key is handed to the rendezvous handler, a key that
torch's c10d and static do not read is one note (never a refusal), and --rdzv-backend takes a handler registered
through torch's `torchrun.handlers` entry points, which reads keys of its own: real torchrun beside accel-launch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.contract.engine_options import EngineOptions
from launcher.contract.rdzv_conf import parse_rdzv_conf
from launcher.node.node_plan import plan_node
from tests.contract.test_engine_options import job
from tests.launches import RECORD_RANK, CliRunnerFn, Launcher, clean_environ

TORCHRUN = Path(sys.executable).with_name("torchrun")
# A handler that writes the settings it was given, then is torch's own c10d under its own name.
PLUGIN = """\
import json
import os


def seen_handler():
    def create(params):
        from torch.distributed.elastic.rendezvous.registry import _create_c10d_handler

        with open(os.environ["SEEN_FILE"], "w") as out:
            json.dump({"backend": params.backend, "config": {k: str(v) for k, v in params.config.items()}}, out)
        handler = _create_c10d_handler(params)
        handler.get_backend = lambda: params.backend  # torch checks the handler is the backend asked for
        return handler

    return create
"""


def _install_plugin(folder: Path) -> dict[str, str]:
    """A real distribution on a path entry with a `torchrun.handlers` entry point `seen`; its PYTHONPATH."""
    folder.mkdir()
    (folder / "seen_rdzv.py").write_text(PLUGIN)
    info = folder / "seen_rdzv-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: seen-rdzv\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchrun.handlers]\nseen = seen_rdzv:seen_handler\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


def test_a_key_c10d_does_not_read_is_one_note_with_did_you_mean_and_the_launch_goes_on(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", "--rdzv-conf", "join_timout=60,read_timeout=9", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    note, = result.stderr.splitlines()
    assert note.startswith("accel-launch: note: --rdzv-conf: torch's c10d and static rendezvous read no 'join_timout'")
    assert "did you mean 'join_timeout' for 'join_timout'?" in note and "'read_timeout'" not in note.split("(")[0]


def test_every_key_reaches_the_handler_as_torchrun_hands_it() -> None:
    from launcher.run.engine.agent_launch import rendezvous_parameters

    engine = EngineOptions(rdzv_conf=parse_rdzv_conf("my_key=7,join_timeout=30"))
    params = rendezvous_parameters(plan_node(job(engine, rdzv_backend="c10d", max_restarts=1), "cpu", 0, {}))
    assert params.config["my_key"] == "7" and params.config["join_timeout"] == "30"


def test_a_known_keys_bad_value_is_still_refused(cli: CliRunnerFn) -> None:
    result = cli(["--rdzv-conf", "join_timeout=-5", str(RECORD_RANK)])
    assert result.status == 2 and "--rdzv-conf join_timeout" in result.stderr


def test_a_registered_handler_is_a_backend_and_its_own_keys_bring_no_note(tmp_path: Path) -> None:
    env = clean_environ(_install_plugin(tmp_path / "plugin"))
    done = subprocess.run([sys.executable, "-m", "launcher", "--dry-run", "--rdzv-backend", "seen", "--rdzv-conf",
                           "my_key=7", str(RECORD_RANK)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "engine: torch elastic's agent starts the ranks (a rendezvous endpoint to meet at)" in done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_registered_handler_gets_the_keys_torchrun_gives_it(launch: Launcher, tmp_path: Path) -> None:
    """Its own endpoint sends every launch to torch elastic's agent, so one path covers both."""
    plugin = _install_plugin(tmp_path / "plugin")
    seen: dict[str, dict] = {}
    for name in ("torchrun", "ours"):
        seen_file = tmp_path / f"{name}.json"
        args = ["--rdzv-backend", "seen", "--rdzv-endpoint", f"127.0.0.1:{_free_port()}", "--rdzv-conf",
                "my_key=7,join_timeout=30", "--nproc-per-node", "1", str(RECORD_RANK)]
        env = {**plugin, "SEEN_FILE": str(seen_file)}
        if name == "torchrun":
            done = subprocess.run([str(TORCHRUN), *args], env=clean_environ({**env, "RECORD_DIR": str(tmp_path)}),
                                  capture_output=True, text=True, timeout=90, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        else:
            result = launch(args, env=env)
            assert result.returncode == 0, result.stderr
        seen[name] = json.loads(seen_file.read_text())
    for name in ("torchrun", "ours"):
        assert seen[name]["backend"] == "seen"
        assert (seen[name]["config"]["my_key"], seen[name]["config"]["join_timeout"]) == ("7", "30")


TORCH_CASE = "--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'"  # torch's test_run.py, quotes and all


def test_timeout_is_checked_only_where_the_handler_reads_it(cli: CliRunnerFn) -> None:
    elastic = cli(["--dry-run", "--nnodes", "1:2", "--rdzv-endpoint", "localhost:29999", TORCH_CASE, str(RECORD_RANK)])
    assert elastic.status == 0, elastic.stderr  # c10d reads no `timeout`: "5'" is handed on, as torchrun does
    assert "did you mean 'join_timeout' for \"'join_timeout\"?" in elastic.stderr
    static = cli(["--dry-run", "--rdzv-backend", "static", "--master-port", "29999", "--rdzv-conf", "timeout=5'",
                  str(RECORD_RANK)])
    assert static.status == 2 and "--rdzv-conf timeout: \"5'\"" in static.stderr


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torchs_own_elastic_case_runs_as_with_torchrun(launch: Launcher, tmp_path: Path) -> None:
    """Its endpoint sends the launch to torch elastic's agent whatever the launch path."""
    args = ["--nnodes=1:2", "--nproc-per-node=2", "--rdzv-backend=c10d", TORCH_CASE, "--monitor-interval=1",
            "--start-method=spawn", str(RECORD_RANK)]
    done = subprocess.run([str(TORCHRUN), f"--rdzv-endpoint=localhost:{_free_port()}", *args], capture_output=True,
                          text=True, timeout=90, cwd=tmp_path, env=clean_environ({"RECORD_DIR": str(tmp_path)}))
    assert done.returncode == 0, done.stderr
    result = launch([f"--rdzv-endpoint=localhost:{_free_port()}", *args])
    assert result.returncode == 0, result.stderr
    assert sorted(result.records()) == [0, 1]
