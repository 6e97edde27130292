"""The direct path across real hosts: hostfile launches (ssh, pdsh, OpenMPI's mpirun, Slurm's srun) and srun
under sbatch know each node's rank before it starts, so no node launcher imports torch, and every rank gets what
torch elastic's agent gives it on the engine path, variable by variable (docs/ARCHITECTURE.md, "Two paths")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.launches import SCRIPTS, clean_environ
from tests.multinode.hosts.hosts import Cluster
from tests.multinode.hosts.slurm_cluster import Slurm
from tests.shared_results import computed_once, shared_folder

ALLREDUCE = SCRIPTS / "allreduce_rank.py"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "slurm_job.sbatch"
COMPARED = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
            "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
            "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")
# In every process of the launch but the ranks: a launcher (the head, a node launcher) that imports torch leaves a
# file named after its host, holding its command line.
WATCH = ("import os, sys\n"
         "def _hook(event, args):\n"
         "    if event != 'import' or args[0] != 'torch' or 'launcher.rank.bootstrap' in ' '.join(sys.orig_argv):\n"
         "        return\n"
         "    name = 'launcher-imported-torch-' + os.uname().nodename\n"
         "    with open(os.path.join(os.environ['RECORD_DIR'], name), 'a') as f:\n"
         "        f.write(repr(sys.orig_argv) + '\\n')\n"
         "sys.addaudithook(_hook)\n")


def _environ(tmp_path: Path, path: str, extra: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """RECORD_DIR for this path's run, and the environment that watches the node launchers (sent to every node)."""
    records, seam = tmp_path / path, tmp_path / "seam"
    records.mkdir()
    seam.mkdir(exist_ok=True)
    (seam / "sitecustomize.py").write_text(WATCH)
    python_path = os.pathsep.join([str(seam), *filter(None, [os.environ.get("PYTHONPATH")])])
    return records, clean_environ({"RECORD_DIR": str(records), "PYTHONPATH": python_path, "ACCEL_LAUNCH_PATH": path,
                                   **extra})


def warm_cache(cluster: Cluster, tmp_path: Path) -> None:
    """A cold backend cache is built once by importing dynamo (README, "Speed"): a dry run on hosta builds it."""
    subprocess.run(cluster.hosts[0].argv([sys.executable, "-m", "launcher", "--dry-run", str(ALLREDUCE)]),
                   cwd=tmp_path, capture_output=True, timeout=120, env=clean_environ(), check=True)


def _ran(records: Path, done: subprocess.CompletedProcess) -> tuple[dict[int, dict], list[str]]:
    """Each rank's record and the hosts whose node launcher imported torch, once the launch succeeded."""
    assert done.returncode == 0, done.stderr
    found = {int(path.stem.split("-")[1]): json.loads(path.read_text()) for path in records.glob("rank-*.json")}
    return found, sorted(path.name.rpartition("-")[2] for path in records.glob("launcher-imported-torch-*"))


def hostfile_launch(cluster: Cluster, tmp_path: Path, path: str, args: list[str], slots: tuple[int, ...],
                    env: dict[str, str] | None = None) -> tuple[dict[int, dict], list[str]]:
    """`accel-launch --hostfile` run on hosta over the first hosts, `slots` ranks each, on `path`."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host.addr} slots={count}\n" for host, count in zip(cluster.hosts, slots)))
    records, environ = _environ(tmp_path, path, env or {})
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--master-port", str(cluster.next_port()),
            "--rdzv-id", "same-on-both-paths", "--rdzv-timeout", "60", "--export", "RECORD_DIR", *args, str(ALLREDUCE)]
    done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, capture_output=True, text=True, timeout=150,
                          env=environ)
    return _ran(records, done)


def compared(records: dict[int, dict], port_of: dict[str, str]) -> dict[int, dict]:
    """The variables both paths give, MASTER_PORT as the port of this run (each run has a port of its own)."""
    return {rank: {key: port_of.get(record["env"][key], record["env"][key]) if key == "MASTER_PORT" else
                   record["env"][key] for key in COMPARED} for rank, record in records.items()}


def assert_as_the_engine_gives(direct: tuple[dict[int, dict], list[str]],
                               engine: tuple[dict[int, dict], list[str]], hosts: int, world: int) -> None:
    (ours, imported), (theirs, engine_imported) = direct, engine
    assert imported == [] and len(engine_imported) == hosts  # no node launcher imported torch on the direct path
    assert sorted(ours) == list(range(world)) and {record["sum"] for record in ours.values()} == {
        world * (world + 1) / 2}
    port = {next(iter(records.values()))["env"]["MASTER_PORT"]: "P" for records in (ours, theirs)}
    assert compared(ours, port) == compared(theirs, port)


RUNNERS = {
    "ssh": lambda cluster: ([*cluster.ssh_flags], {}),
    "pdsh": lambda cluster: (["--launcher", "pdsh"], {"PDSH_SSH_ARGS_APPEND": cluster.ssh_args}),
    "openmpi": lambda cluster: (["--launcher", "openmpi"], {
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_plm_rsh_agent": "ssh",
        "OMPI_MCA_plm_rsh_args": cluster.ssh_args}),
}


UNEVEN_SLOTS = (2, 1, 3)  # not uniform: RANK counts the earlier nodes' ranks, WORLD_SIZE all of them


def engine_run(cluster: Cluster, tmp_path: Path, shared: Path) -> tuple[dict[int, dict], list[str]]:
    """The engine path's run over ssh, made once per session (tests/shared_results.py): torch's agent gives each rank
    its variables whichever runner started the node launchers, so every runner's direct path is compared with this
    one run. Every worker's cluster has the same hosts and addresses; the port is compared as "this run's port"."""

    def run() -> list[object]:
        ssh_args, ssh_env = RUNNERS["ssh"](cluster)
        return list(hostfile_launch(cluster, tmp_path, "engine", ssh_args, UNEVEN_SLOTS, ssh_env))

    records, imported = computed_once(shared, ["engine hostfile run over ssh", UNEVEN_SLOTS], run)
    return {int(rank): record for rank, record in records.items()}, imported


@pytest.mark.timeout(300)
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_hostfile_launch_with_uneven_slots_takes_the_direct_path_with_the_engines_variables(
        cluster: Cluster, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, runner: str) -> None:
    args, env = RUNNERS[runner](cluster)
    warm_cache(cluster, tmp_path)
    engine = engine_run(cluster, tmp_path, shared_folder(tmp_path_factory))
    runs = {"auto": hostfile_launch(cluster, tmp_path, "auto", args, UNEVEN_SLOTS, env), "engine": engine}
    assert_as_the_engine_gives(runs["auto"], runs["engine"], hosts=3, world=6)
    layout = sorted((r["host"], r["env"]["RANK"], r["env"]["LOCAL_WORLD_SIZE"]) for r in runs["auto"][0].values())
    assert layout == [("hosta", "0", "2"), ("hosta", "1", "2"), ("hostb", "2", "1"), ("hostc", "3", "3"),
                      ("hostc", "4", "3"), ("hostc", "5", "3")]
    assert {r["env"]["MASTER_ADDR"] for r in runs["auto"][0].values()} == {cluster.hosts[0].addr}
    assert cluster.wait_quiet() == {}


def _slurm_env(slurm: Slurm, records: Path, environ: dict[str, str]) -> dict[str, str]:
    """A user's shell on hosta: the venv's accel-launch on PATH, the cluster's SLURM_CONF."""
    return {**environ, **slurm.env, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "RECORD_DIR": str(records)}


@pytest.mark.timeout(300)
def test_a_slurm_hostfile_launch_through_srun_takes_the_direct_path_with_the_engines_variables(
        cluster: Cluster, slurm: Slurm, tmp_path: Path) -> None:
    (tmp_path / "hostfile").write_text("hosta slots=2\nhostb slots=1\n")
    warm_cache(cluster, tmp_path)
    runs = {}
    for path in ("auto", "engine"):
        records, environ = _environ(tmp_path, path, {})
        argv = [sys.executable, "-m", "launcher", "--hostfile", "hostfile", "--launcher", "slurm", "--rdzv-id", "same",
                "--master-port", str(cluster.next_port()), "--export", "RECORD_DIR", str(ALLREDUCE)]
        done = subprocess.run(cluster.hosts[0].argv(argv), cwd=tmp_path, env=_slurm_env(slurm, records, environ),
                              capture_output=True, text=True, timeout=220)
        runs[path] = _ran(records, done)
    assert_as_the_engine_gives(runs["auto"], runs["engine"], hosts=2, world=3)
    assert cluster.wait_quiet() == {}


@pytest.mark.timeout(300)
def test_srun_under_sbatch_with_a_number_of_ranks_takes_the_direct_path_with_the_engines_variables(
        cluster: Cluster, slurm: Slurm, tmp_path: Path) -> None:
    warm_cache(cluster, tmp_path)
    runs = {}
    for path in ("auto", "engine"):
        records, environ = _environ(tmp_path, path, {"NPROC_PER_NODE": "2", "MASTER_PORT": str(cluster.next_port())})
        output = records / "job.out"
        done = subprocess.run(cluster.hosts[0].argv(["sbatch", "--wait", f"--output={output}", str(EXAMPLE),
                                                     str(ALLREDUCE)]),
                              cwd=tmp_path, env=_slurm_env(slurm, records, environ), capture_output=True, text=True,
                              timeout=220)
        assert done.returncode == 0, done.stderr + (output.read_text() if output.exists() else "")
        runs[path] = _ran(records, done)
    # Slurm's job id is the run id, and differs between the two jobs.
    for records, _ in runs.values():
        for record in records.values():
            record["env"]["TORCHELASTIC_RUN_ID"] = record["env"]["TORCHELASTIC_RUN_ID"].partition(".")[2]
    assert_as_the_engine_gives(runs["auto"], runs["engine"], hosts=2, world=4)
    assert cluster.wait_quiet() == {}


LOOP = Path(__file__).resolve().parents[2] / "faults" / "scripts" / "collective_loop.py"


@pytest.mark.timeout(200)
@pytest.mark.parametrize("path", ["auto", "engine"])
def test_a_lost_host_stops_the_job_on_every_host_within_30_s(cluster: Cluster, tmp_path: Path, path: str) -> None:
    """Every process of hostb's job (its node launcher and its ranks) SIGKILLed mid-collective, as when the host
    goes down; hosta's ranks lose their peer, and the head stops the rest."""
    hosta, hostb = cluster.hosts[:2]
    warm_cache(cluster, tmp_path)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"{hosta.addr} slots=2\n{hostb.addr} slots=2\n")
    records, environ = _environ(tmp_path, path, {})
    argv = [sys.executable, "-m", "launcher", "--hostfile", str(hostfile), "--master-port", str(cluster.next_port()),
            *cluster.ssh_flags, "--grace-period", "1", "--export", "RECORD_DIR", str(LOOP)]
    head = subprocess.Popen(hosta.argv(argv), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environ)
    deadline = time.monotonic() + 120
    while len(list(records.glob("started-*"))) < 4:
        assert time.monotonic() < deadline and head.poll() is None, head.communicate()
        time.sleep(0.2)
    job = [process for process in map(psutil.Process, hostb.pids() - {daemon.pid for daemon in hostb.daemons})
           if "python" in " ".join(process.cmdline())]
    killed = time.monotonic()
    for process in job:
        process.kill()
    _, stderr = head.communicate(timeout=120)
    elapsed = time.monotonic() - killed
    print(f"lost host, {path} path: head exited {head.returncode} {elapsed:.2f} s after the kill")
    assert head.returncode != 0, stderr
    assert f"the node launcher on {hostb.addr} exited with status" in stderr
    assert elapsed < 30, f"took {elapsed:.1f} s"
    assert cluster.wait_quiet() == {}
