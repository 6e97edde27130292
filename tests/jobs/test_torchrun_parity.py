"""Every variable torchrun gives a rank, accel-launch gives it too, with the same value for the same job.

Real torchrun (installed with torch) and accel-launch run the same tiny script one after the other; the
script records its whole environment. What torchrun added to the parent's environment is its contract.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from launcher.node.node_env import omp_threads
from tests.launches import SCRIPTS, CliRunnerFn, clean_environ, on_paths
from tests.shared_results import computed_once, shared_folder

# Every test here runs on both launch paths (tests/conftest.py, `launch_path`).
pytestmark = pytest.mark.usefixtures("launch_path")

DUMP = SCRIPTS / "dump_env.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
# Variables whose value is the job's own by nature: checked for their shape, not equality.
ERROR_FILE = "TORCHELASTIC_ERROR_FILE"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], tag: str, record_dir: Path) -> dict[int, dict[str, str]]:
    environ = clean_environ({"RECORD_DIR": str(record_dir)})
    environ.pop("OMP_NUM_THREADS", None)
    done = subprocess.run([*command, str(DUMP), "--tag", tag], env=environ, capture_output=True, text=True,
                          timeout=90, cwd=record_dir)
    assert done.returncode == 0, done.stderr
    return {int(path.stem.rsplit("-", 1)[1]): json.loads(path.read_text())["env"]
            for path in record_dir.glob(f"{tag}-*.json")}


Ranks = dict[int, dict[str, str]]
Contract = Callable[[Path, list[str]], tuple[Ranks, Ranks, set[str]]]


@pytest.fixture
def contract(tmp_path_factory: pytest.TempPathFactory) -> Contract:
    """Run `flags` under torchrun (once in the session for both paths and both workers: tests/shared_results.py)
    and under accel-launch: (theirs, ours, the variables torchrun added to its parent's environment)."""
    shared = shared_folder(tmp_path_factory)

    def run(tmp_path: Path, flags: list[str]) -> tuple[Ranks, Ranks, set[str]]:
        def torchrun() -> list[object]:
            folder = tmp_path_factory.mktemp("torchrun")
            theirs = _run([str(TORCHRUN), *flags], "torchrun", folder)
            parent = clean_environ({"RECORD_DIR": str(folder)})
            added = {name for name, value in theirs[0].items() if parent.get(name) != value} - {"_", "PWD", "OLDPWD"}
            return [sorted(theirs.items()), sorted(added)]

        theirs, added = computed_once(shared, ["torchrun", *flags], torchrun)
        ours = _run([sys.executable, "-m", "launcher", *flags], "ours", tmp_path)
        return {rank: env for rank, env in theirs}, ours, set(added)

    return run


def _assert_same(theirs: dict[str, str], ours: dict[str, str], names: set[str], shaped: set[str]) -> None:
    for name in sorted(names - shaped - {ERROR_FILE, "OMP_NUM_THREADS"}):
        assert ours.get(name) == theirs[name], f"{name}: torchrun {theirs[name]!r}, accel-launch {ours.get(name)!r}"
    for path in (theirs[ERROR_FILE], ours[ERROR_FILE]):
        assert Path(path).name == "error.json" and Path(path).parent.name == theirs["LOCAL_RANK"]


@pytest.mark.timeout(180)
def test_a_two_rank_job_gets_torchruns_whole_contract_variable_by_variable(tmp_path: Path, contract: Contract) -> None:
    flags = ["--nproc-per-node", "2", "--master-port", str(_free_port())]  # a port of its own: torchrun runs again
    theirs, ours, added = contract(tmp_path, flags)
    expected = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
                "TORCH_NCCL_ASYNC_ERROR_HANDLING", ERROR_FILE, "OMP_NUM_THREADS"}
    assert expected <= added, sorted(added)
    assert set(ours) == set(theirs) == {0, 1}
    for rank in (0, 1):
        _assert_same(theirs[rank], ours[rank], added, shaped=set())
        # Ours: physical cores shared out (README); torchrun: always 1.
        assert ours[rank]["OMP_NUM_THREADS"] == str(omp_threads(psutil.cpu_count(logical=False), 2))
    assert (ours[1]["MASTER_ADDR"], ours[1]["ROLE_NAME"], ours[1]["TORCHELASTIC_RUN_ID"]) == ("127.0.0.1", "default",
                                                                                              "none")


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.mark.timeout(180)
# A node range takes the launch to the engine on either path: it runs once.
@on_paths(("flags",), {"standalone": ["--standalone", "--nnodes", "1"],
                       "standalone-node-range": ["--standalone", "--nnodes", "1:2"], "one-node-default": []},
          on_engine=["standalone", "one-node-default"])
def test_standalone_gets_torchruns_contract_with_a_fresh_run_id_and_free_port(tmp_path: Path, flags: list[str],
                                                                            contract: Contract) -> None:
    # A one-node launch without an endpoint or port is standalone for torchrun too (localhost:0, a fresh run id).
    # With a node range torch's rendezvous waits its last call for more nodes (30 s by default), both launchers.
    last_call = ["--rdzv-conf", "last_call_timeout=1"] if "1:2" in flags else []
    theirs, ours, added = contract(tmp_path, [*flags, "--nproc-per-node", "2", *last_call])
    for rank in (0, 1):
        _assert_same(theirs[rank], ours[rank], added, shaped={"MASTER_PORT", "TORCHELASTIC_RUN_ID"})
        assert int(ours[rank]["MASTER_PORT"]) > 0
        assert re.fullmatch(UUID, ours[rank]["TORCHELASTIC_RUN_ID"]), ours[rank]["TORCHELASTIC_RUN_ID"]
        assert re.fullmatch(UUID, theirs[rank]["TORCHELASTIC_RUN_ID"]), theirs[rank]["TORCHELASTIC_RUN_ID"]
    assert ours[0]["TORCHELASTIC_RUN_ID"] == ours[1]["TORCHELASTIC_RUN_ID"] != theirs[0]["TORCHELASTIC_RUN_ID"]
    assert ours[0]["WORLD_SIZE"] == "2" and ours[0]["MASTER_ADDR"] == socket.getfqdn()


@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # in-process: no ACCEL_* setting reaches it
def test_the_dry_run_shows_the_master_addr_and_role_the_ranks_get(cli: CliRunnerFn) -> None:
    plain = cli(["--dry-run", str(DUMP)])
    alone = cli(["--dry-run", "--standalone", "--role", "trainer", str(DUMP)])
    assert plain.status == alone.status == 0, plain.stderr + alone.stderr
    port = cli(["--dry-run", "--master-port", "29999", str(DUMP)])
    assert f"MASTER_ADDR={socket.getfqdn()} " in plain.row("rank env 0") and "ROLE_NAME=default" in plain.row("rank env 0")
    assert "MASTER_ADDR=127.0.0.1 " in port.row("rank env 0")
    assert f"MASTER_ADDR={socket.getfqdn()} " in alone.row("rank env 0")
    assert "ROLE_NAME=trainer" in alone.row("rank env 0")
