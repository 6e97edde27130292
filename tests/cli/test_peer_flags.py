"""torchrun's and DeepSpeed's flags: each row of docs/FLAGS.md is implemented or refused in one line.

In-process through click (`launcher.cli.command.accel_launch`) and `--dry-run`: nothing starts here; the launches
that need real ranks are in tests/jobs/test_dropin_launches.py.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from accelerators.cuda import CUDAAccelerator
from launcher.cli.command import accel_launch
from launcher.cli.declared_options import declared_names
from launcher.cli.peer_flags import REFUSED as REFUSED_FLAGS
from launcher.cli.peer_flags import PeerFlags
from launcher.head.selection import HostFlags
from launcher.contract.engine_options import EngineOptions
from launcher.contract.job_config import RunSettings
from launcher.contract.job_json import job_from_json
from tests.launches import clean_environ


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "train.py"
    path.write_text("open('started', 'w')\n")
    return str(path)


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    environ = {name: None for name in clean_environ() if name.startswith(("ACCEL_", "PET_", "OMP_NUM_THREADS"))}
    return CliRunner().invoke(accel_launch, args, env={**environ, **(env or {})}, prog_name="accel-launch")


def plan(args: list[str], script: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The dry-run table as label -> values."""
    result = invoke(["--dry-run", *args, script], env)
    assert result.exit_code == 0, result.output
    rows: dict[str, list[str]] = {}
    for line in result.stdout.splitlines()[1:]:
        label, _, value = line.strip().partition(" : ")
        rows.setdefault(label.strip(), []).append(value)
    return rows


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel-launch: error: "), result.stderr
    return lines[0]


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Four fake CUDA devices (one availability seam), and the environment that selects cuda."""
    monkeypatch.setattr(CUDAAccelerator, "is_available", classmethod(lambda cls: True))
    monkeypatch.setattr(CUDAAccelerator, "device_count", classmethod(lambda cls: 4))
    return {"ACCEL_ACCELERATOR": "cuda", "ACCEL_COMPILE_BACKEND": "eager"}


REFUSED = [
    (["--logs-specs", "x"], "invalid value for --logs-specs: 'x' (expected the name of one of torch's"),
    (["--numa-binding", "node"], "--numa-binding is not supported here: not supported; pin ranks"),
    (["--autotuning", "tune"], "--autotuning is not supported here: the DeepSpeed autotuner"),
    (["--elastic_training"], "--elastic_training is not supported here: use torch elastic: --nnodes MIN:MAX"),
    (["--min_elastic_nodes", "1"], "--min_elastic_nodes is not supported here: use --nnodes MIN:MAX"),
    (["--max_elastic_nodes", "2"], "--max_elastic_nodes is not supported here: use --nnodes MIN:MAX"),
    (["--launcher_args", "x"], "--launcher_args is not supported here: it needs --hostfile"),
    (["--comment", "c"], "--comment is not supported here: it needs --hostfile"),
    (["--account", "a"], "--account is not supported here: it needs --hostfile"),
    (["--venv_script", "v.sh"], "--venv_script is not supported here: it needs --hostfile"),
    (["--rdzv-backend", "etcd"], "--rdzv-backend etcd is not supported here: it needs an etcd server and the "
                                 "python-etcd package, which is not installed; use c10d (the default)"),
    (["--rdzv_backend", "etcd-v2"], "--rdzv-backend etcd-v2 is not supported here"),
    (["--start-method", "fork"], "--start-method fork is not supported here: every rank is a fresh interpreter"),
    (["--start_method", "forkserver"], "--start-method forkserver is not supported here"),
    (["--launcher", "mvapich"], "--launcher mvapich is not supported here: use --launcher openmpi"),
    (["--launcher", "IMPI"], "--launcher impi is not supported here"),
    (["--launcher", "mpich"], "--launcher mpich is not supported here"),
    (["--launcher", "pdsh"], "--launcher pdsh is not supported here: it needs --hostfile"),
    (["--launcher", "openmpi"], "--launcher openmpi is not supported here: it needs --hostfile"),
    (["--force_multi"], "--force_multi is not supported here: it needs --hostfile"),
    (["--num_nodes", "2"], "invalid value for --num_nodes: 2 (without --hostfile there is one node"),
    (["--include", "worker-1:0"], "invalid value for --include: 'worker-1:0' (without --hostfile the only host"),
    (["--exclude", "worker-1"], "invalid value for --exclude: 'worker-1' (without --hostfile the only host"),
    (["--num_gpus", "2", "--nproc-per-node", "2"], "give it or --num_gpus / --include / --exclude, not both"),
    (["--standalone", "--nnodes", "2"], "--standalone runs one node"),
    (["--standalone", "--rdzv-endpoint", "h:1"], "--standalone: it picks its own rendezvous and free port; drop "
                                                 "--rdzv-endpoint"),
    (["--standalone", "--master-port", "29500"], "drop --master-port"),
    (["--run-path", "-m"], "--run-path: it runs a script by path"),
    (["--nproc-per-node", "gpu"], "invalid value for --nproc-per-node: 'gpu' (cuda is not available here"),
    (["--nproc-per-node", "xpu"], "invalid value for --nproc-per-node: 'xpu' (xpu is not available here"),
    (["--rdzv-conf", "timeout"], "invalid value for --rdzv-conf: 'timeout'"),
    (["--monitor-interval", "0"], "invalid value for --monitor-interval: 0.0"),
    (["--redirects", "4"], "invalid value for --redirects: '4'"),
    (["--tee", "0:3,x"], "invalid value for --tee: '0:3,x'"),
    (["-t", "5"], "invalid value for --tee: '5'"),
    (["-r", "x"], "invalid value for --redirects: 'x'"),
    (["--local-ranks-filter", "a"], "invalid value for --local-ranks-filter: 'a'"),
    (["--role", " "], "invalid value for --role"),
    (["--signals-to-handle", "SIGFOO"], "invalid value for --signals-to-handle"),
    (["--bind_core_list", "3-1"], "invalid value for --bind_core_list: '3-1'"),
    (["--bind_core_list", "0-4096"], "are not available to this launcher"),
    (["--enable_each_rank_log", "a", "--log-dir", "b"], "--log-dir b says otherwise"),
    (["--shutdown-timeout", "3", "--grace-period", "4"], "--grace-period 4.0 says otherwise"),
]


@pytest.mark.parametrize(("args", "fragment"), REFUSED, ids=[" ".join(case[0]) for case in REFUSED])
def test_a_refused_or_misused_peer_flag_is_one_line_with_exit_2(script: str, args: list[str], fragment: str) -> None:
    line = one_error_line(invoke([*args, script]))
    assert fragment in line


def test_with_a_hostfile_every_option_reaches_the_nodes_in_the_job_they_are_given(script: str, tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=2\nnode2 slots=2\n")
    flags = ["--hostfile", str(hostfile), "--launcher", "openmpi", "--tee", "3", "--role", "trainer",
             "--bind_core_list", "0-1", "--max-restarts", "2", "--rdzv-timeout", "77", "--grace-period", "2",
             "--timeout", "50", "--log-dir", str(tmp_path / "logs"), "-v", "--accelerator", "cpu",
             "--compile-backend", "eager"]
    rows = plan(flags, script)
    sent = dict(value.partition("=")[::2] for value in rows["runner env 0"])
    job = job_from_json(sent["ACCEL_NODE_JOB"])

    assert job.settings == RunSettings(rdzv_timeout=77, max_restarts=2, grace_period=2.0, timeout=50.0,
                                       log_dir=str(tmp_path / "logs"), bind_cores="0-1", verbose=True,
                                       engine=EngineOptions(role="trainer", tee="3"))
    assert (job.backend.name, job.backend.source, job.accelerator_choice) == ("eager", "--compile-backend", "cpu")
    assert (job.nnodes, job.rdzv_endpoint, job.program.target) == ("2", "node1:29500", script)
    assert "ACCEL_COMPILE_BACKEND" not in sent


def test_with_a_hostfile_the_core_list_is_each_nodes_to_check_not_the_heads(script: str, tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=2\nnode2 slots=2\n")
    rows = plan(["--hostfile", str(hostfile), "--launcher", "openmpi", "--bind_core_list", "0-4095"], script)
    sent = dict(value.partition("=")[::2] for value in rows["runner env 0"])
    assert job_from_json(sent["ACCEL_NODE_JOB"]).settings.bind_cores == "0-4095"


def test_local_addr_with_a_hostfile_is_refused_in_one_line(script: str, tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=2\nnode2 slots=2\n")
    line = one_error_line(invoke(["--hostfile", str(hostfile), "--local-addr", "10.0.0.1", script]))
    assert "--local-addr with --hostfile is not supported here: it names one node's address" in line


@pytest.mark.parametrize(("args", "expected"), [
    (["--nproc-per-nodes", "2"], "No such option '--nproc-per-nodes'. (Did you mean one of: '--nproc-per-node', "
                                 "'--nproc_per_node', '--grace-period'?)"),
    (["--standalonee"], "No such option '--standalonee'. Did you mean '--standalone'?"),
    (["--nnodes"], "Option '--nnodes' requires an argument."),
    (["--master-port", "x"], "Invalid value for '--master-port' / '--master_port': 'x' is not a valid integer "
                             "(digits 0-9 only)."),
    ([], "Missing argument 'SCRIPT'."),
    (["--log_level", "loud"], "Invalid value for '--log-level' / '--log_level': 'loud' is not one of 'debug', 'info', "
                              "'warning', 'error', 'critical'."),
    (["-q", "--log_level", "info", "x.py"], "-v/--verbose (or --log_level debug/info) and -q/--quiet (or "
                                            "--log_level error/critical) cannot be used together"),
])
def test_a_usage_error_is_one_line_with_click_did_you_mean(args: list[str], expected: str) -> None:
    assert one_error_line(invoke(args)) == f"accel-launch: error: {expected}"


def test_standalone_runs_one_node_on_a_free_port_also_with_nnodes_1_to_2(script: str) -> None:
    for nnodes in ("1", "1:2"):
        rows = plan(["--standalone", "--nnodes", nnodes, "--nproc-per-node", "2"], script)
        assert rows["nodes"] == ["1 (this is node 0)"] and rows["world size"] == ["2"]
        assert rows["rendezvous"] == ["this node alone: its own store on a free port"]


def test_nproc_per_node_cpu_is_the_cpus_this_launcher_may_use(script: str) -> None:
    import os

    assert plan(["--nproc-per-node", "cpu"], script)["ranks per node"] == [str(len(os.sched_getaffinity(0)))]


@pytest.mark.parametrize(("args", "nproc", "devices"), [
    (["--nproc-per-node", "gpu"], "4", None),
    (["--nproc_per_node", "auto"], "4", None),
    (["--num_gpus", "2"], "2", "0,1"),
    (["--num_accelerators", "3"], "3", "0,1,2"),
    (["--include", "localhost:0,2"], "2", "0,2"),
    (["-i", "localhost:3"], "1", "3"),
    (["--exclude", "localhost:1"], "3", "0,2,3"),
    (["-e", "localhost:0@localhost:3"], "2", "1,2"),
    (["--num_nodes", "1", "--num_gpus", "1"], "1", "0"),
])
def test_device_flags_without_a_hostfile_choose_local_devices(script: str, fake_cuda: dict[str, str],
                                                              args: list[str], nproc: str, devices: str | None) -> None:
    rows = plan(args, script, fake_cuda)
    assert rows["ranks per node"] == [nproc]
    visible = [value for value in rows["environment"] if value.startswith("CUDA_VISIBLE_DEVICES=")]
    assert visible == ([f"CUDA_VISIBLE_DEVICES={devices}"] if devices else [])


def test_device_flags_past_the_devices_say_which_exist(script: str, fake_cuda: dict[str, str]) -> None:
    line = one_error_line(invoke(["--include", "localhost:4", script], fake_cuda))
    assert "host 'localhost' has slots 0-3, not 4" in line


def test_on_cpu_device_flags_start_that_many_ranks_and_say_so_in_one_line(script: str) -> None:
    result = invoke(["--dry-run", "--include", "localhost:0,2", script])
    assert result.exit_code == 0, result.output
    assert result.stderr == "accel-launch: note: cpu has no devices to choose from: the device flags start 2 rank(s)\n"
    assert "ranks per node  : 2" in result.stdout


@pytest.mark.parametrize("args", [["--no_local_rank"], ["--no-local-rank"], ["--no_ssh_check"], ["--no_ssh"],
                                  ["--run-path"], ["--start-method", "spawn"]])
def test_flags_whose_meaning_is_already_ours_are_accepted(script: str, args: list[str]) -> None:
    assert plan(args, script)["ranks per node"] == ["1"]


def test_enable_each_rank_log_keeps_each_ranks_logs_like_log_dir(script: str, tmp_path: Path) -> None:
    assert plan(["--enable_each_rank_log", str(tmp_path / "logs")], script)["log dir"] == [str(tmp_path / "logs")]


def test_bind_cores_to_rank_shares_the_cores_and_sets_omp_threads(script: str) -> None:
    import os

    cores = sorted(os.sched_getaffinity(0))
    per_rank = len(cores) // 2
    env = plan(["--bind_cores_to_rank", "--nproc-per-node", "2"], script)["environment"]
    shares = ";".join(",".join(map(str, cores[i * per_rank:(i + 1) * per_rank])) for i in range(2))
    assert f"ACCEL_CPU_BINDING={shares}" in env and f"OMP_NUM_THREADS={per_rank}" in env


def test_no_ssh_with_a_hostfile_starts_this_nodes_share_only(script: str, tmp_path: Path,
                                                             fake_cuda: dict[str, str]) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=4\nnode2 slots=4\n")
    rows = plan(["--hostfile", str(hostfile), "--no_ssh", "--node-rank", "1", "--include", "node1@node2:1,3"],
                script, fake_cuda)
    assert rows["nodes"] == ["2 (this is node 1)"] and rows["ranks per node"] == ["2"]
    assert "CUDA_VISIBLE_DEVICES=1,3" in rows["environment"]
    assert rows["rendezvous"][0].startswith("static at node1:29500")


def test_pet_variables_set_flags_as_torchrun_reads_them(script: str) -> None:
    rows = plan([], script, {"PET_NPROC_PER_NODE": "3", "PET_STANDALONE": "1"})
    assert rows["ranks per node"] == ["3"] and any("MASTER_ADDR=" in row for row in rows["rank env 2"])


def test_force_multi_and_no_ssh_check_with_a_hostfile_go_through_the_runner(script: str, tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=2\n")
    rows = plan(["-H", str(hostfile), "--force_multi", "--no_ssh_check", "-i", "node1:1"], script)
    assert rows["runner command"][0].startswith("ssh -o BatchMode=yes")
    assert "ACCEL_NODE_DEVICES=1 " in rows["runner command"][0]


@pytest.mark.slow  # imports torch's and DeepSpeed's launchers
def test_every_flag_of_torchruns_and_deepspeeds_parsers_is_known_here(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from deepspeed.launcher import runner
    from torch.distributed.run import get_args_parser

    class Captured(Exception):
        """DeepSpeed builds its parser inside parse_args: this stops it there, parser in hand."""

    def capture(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise Captured(parser)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(Captured) as deepspeed:
        runner.parse_args([])
    ours = {name for param in accel_launch.params for name in (*param.opts, *param.secondary_opts)}
    for parser in (get_args_parser(), deepspeed.value.args[0]):
        theirs = {name for action in parser._actions for name in action.option_strings} - {"-h", "--help"}
        assert theirs <= ours, sorted(theirs - ours)


def test_every_flag_lands_in_exactly_one_typed_field() -> None:
    # The click layer packs its values into PeerFlags and HostFlags by field name; the options declared on
    # the fields of LaunchOptions, RunSettings and EngineOptions are built into them by name.
    own = {"script", "script_args", "module", "no_python", "dry_run", "verbose", "quiet", "log_level"}
    packed = [*own, *(item.name for kind in (PeerFlags, HostFlags) for item in fields(kind) if item.name != "refused"),
              *declared_names(), *REFUSED_FLAGS]
    assert sorted(packed) == sorted(param.name for param in accel_launch.params)
