"""The head of a hostfile launch, through `accel-launch --dry-run -H FILE`: the runner commands it would start,
exactly, and what each node launcher is told (tests/multinode/hosts/ runs them on real hosts)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from launcher.contract.job_config import JobConfig
from launcher.contract.job_json import job_from_json
from tests.launches import CliRun, CliRunnerFn

HOSTFILE = "# two nodes\nh1 slots=2\n\nh2 slots=1\n"


def dry_run(cli: CliRunnerFn, tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> CliRun:
    (tmp_path / "hostfile").write_text(HOSTFILE)
    (tmp_path / "train.py").write_text("")
    result = cli(["--dry-run", "-H", "hostfile", *args], env=env)
    assert result.status == 0, result.stderr
    return result


def remote_words(ssh_command: str) -> list[str]:
    """What an ssh runner command runs on its node: the words after `cd DIR && exec`."""
    remote = shlex.split(ssh_command)[-1]
    cd, sep, command = remote.partition(" && exec ")
    assert sep and shlex.split(cd)[0] == "cd", remote
    return shlex.split(command)


def split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """`env K=V ... PROGRAM ARGS` -> ({K: V}, [PROGRAM, ARGS])."""
    assert words[0] == "env", words
    assignments = [word for word in words[1:] if "=" in word and not word.startswith("-")]
    rest = words[1 + len(assignments):]
    return dict(word.split("=", 1) for word in assignments), rest


def sent_job(env: dict[str, str]) -> JobConfig:
    """The job the head hands a node (ACCEL_NODE_JOB), as the node reads it."""
    return job_from_json(env["ACCEL_NODE_JOB"])


def test_ssh_starts_one_node_launcher_per_host_each_told_its_rank_and_the_shared_job(
    cli: CliRunnerFn, tmp_path: Path
) -> None:
    result = dry_run(cli, tmp_path, ["--compile-backend", "eager", "train.py", "--msg", "a b"])
    commands = [value for label, value in result.plan() if label.startswith("node ") and label.endswith(" command")]
    assert len(commands) == 2
    jobs = []
    for rank, (command, host) in enumerate(zip(commands, ("h1", "h2"))):
        assert shlex.split(command)[:6] == ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                                            host]
        env, argv = split_env(remote_words(command))
        assert (env["ACCEL_NODE_RANK"], env["ACCEL_NODE_COUNT"]) == (str(rank), "2")
        assert (env["ACCEL_NODE_HOSTS"], env["ACCEL_NODE_DEVICES"]) == (host, ("0,1", "0")[rank])
        assert argv == [sys.executable, "-m", "launcher.node", "--stop-on-stdin-eof"]
        job = sent_job(env)
        assert (job.nnodes, job.rdzv_endpoint) == ("2", "h1:29500")
        assert (job.backend.name, job.backend.source) == ("eager", "--compile-backend")
        assert (job.program.mode, job.program.target, job.program.args) == ("script", "train.py", ("--msg", "a b"))
        jobs.append(job)
    assert jobs[0] == jobs[1] and jobs[0].rdzv_id  # one job: every node joins the same rendezvous


def test_the_backend_is_resolved_once_at_the_head_and_passed_with_its_source_not_re_resolved(
    cli: CliRunnerFn, tmp_path: Path
) -> None:
    result = dry_run(cli, tmp_path, ["train.py"], env={"ACCEL_COMPILE_BACKEND": "aot_eager"})
    assert result.row("compile backend") == "aot_eager (from ACCEL_COMPILE_BACKEND)"
    env, _ = split_env(remote_words(result.row("node 1 command")))
    job = sent_job(env)
    assert (job.backend.name, job.backend.source) == ("aot_eager", "ACCEL_COMPILE_BACKEND")
    assert "ACCEL_COMPILE_BACKEND" not in env and "ACCEL_COMPILE_BACKEND_SOURCE" not in env


def test_the_head_forwards_its_node_options_and_master_port_to_every_node(cli: CliRunnerFn, tmp_path: Path) -> None:
    result = dry_run(cli, tmp_path, ["--master-port", "29123", "--max-restarts", "2", "--grace-period", "3",
                                     "--rdzv-timeout", "60", "--timeout", "600", "--log-dir", "logs", "train.py"])
    for label in ("node 0 command", "node 1 command"):
        env, _ = split_env(remote_words(result.row(label)))
        job = sent_job(env)
        assert job.rdzv_endpoint == "h1:29123"
        settings = job.settings
        assert (settings.max_restarts, settings.grace_period, settings.rdzv_timeout) == (2, 3.0, 60)
        assert (settings.timeout, settings.log_dir, settings.master_port) == (600.0, "logs", 29123)


@pytest.mark.parametrize(("flags", "program"), [(["-m"], ("module", "pkg.train")), (["--no-python"], ("exec", "true"))])
def test_module_and_program_modes_reach_the_node_launchers(
    cli: CliRunnerFn, tmp_path: Path, flags: list[str], program: tuple[str, str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text("")
    result = dry_run(cli, tmp_path, [*flags, program[-1], "x"])
    env, _ = split_env(remote_words(result.row("node 0 command")))
    job = sent_job(env)
    assert (job.program.mode, job.program.target, job.program.args) == (*program, ("x",))


def test_include_picks_the_hosts_and_slots_and_exported_variables_are_sent(cli: CliRunnerFn, tmp_path: Path) -> None:
    result = dry_run(cli, tmp_path, ["-i", "h1:1", "--export", "MY_SETTING", "train.py"],
                     env={"MY_SETTING": "on", "NOT_SENT": "x"})
    commands = [label for label, _ in result.plan() if "command" in label]
    assert commands == ["runner command"]  # one node left: h1, with its device 1 only
    command = result.row("runner command")
    assert shlex.split(command)[5] == "h1"
    env, _ = split_env(remote_words(command))
    assert (env["ACCEL_NODE_HOSTS"], env["ACCEL_NODE_DEVICES"]) == ("h1", "1")
    assert env["MY_SETTING"] == "on" and "NOT_SENT" not in env
    assert sent_job(env).nnodes == "1"


def test_pdsh_is_one_runner_command_for_every_host(cli: CliRunnerFn, tmp_path: Path) -> None:
    result = dry_run(cli, tmp_path, ["--launcher", "pdsh", "train.py"])
    words = shlex.split(result.row("runner command"))
    assert words[:6] == ["pdsh", "-S", "-f", "1024", "-w", "h1,h2"]
    # pdsh's own `%` expansion: every `%` of ours is doubled, so undo that before reading the job.
    env, argv = split_env(shlex.split(words[6].partition(" && exec ")[2].replace("%%", "%")))
    assert env["ACCEL_NODE_HOST"] == "%h"
    assert argv == [sys.executable, "-m", "launcher.node"]
    assert sent_job(env).nnodes == "2"
    assert result.row("runner env 0") == "PDSH_RCMD_TYPE=ssh"


@pytest.mark.parametrize(("runner", "start"), [
    ("openmpi", ["mpirun", "-n", "2", "--host", "h1:1,h2:1"]),
    ("slurm", ["srun", "--nodes", "2", "--ntasks", "2", "--ntasks-per-node", "1", "--nodelist", "h1,h2"]),
])
def test_openmpi_and_slurm_start_one_node_launcher_per_host_with_the_node_table_in_their_env(
    cli: CliRunnerFn, tmp_path: Path, runner: str, start: list[str]
) -> None:
    result = dry_run(cli, tmp_path, ["--launcher", runner, "train.py", "--msg", "a b"])
    words = shlex.split(result.row("runner command"))
    assert words[:len(start)] == start
    assert words[words.index(sys.executable):] == [sys.executable, "-m", "launcher.node"]
    sent = dict(value.split("=", 1) for label, value in result.plan() if label == "runner env 0")
    assert (sent["ACCEL_NODE_HOSTS"], sent["ACCEL_NODE_DEVICES"]) == ("h1,h2", "0,1;0")
    assert sent_job(sent).program.args == ("--msg", "a b")


@pytest.mark.parametrize(("hostfile", "args", "fragment"), [
    ("h1 slots=x\n", [], "hostfile hf:1"),
    (HOSTFILE, ["-i", "h9"], "h9"),
    (HOSTFILE, ["-i", "h1", "-e", "h2"], "--include"),
])
def test_a_bad_hostfile_or_selection_is_one_line_and_exit_2(
    cli: CliRunnerFn, tmp_path: Path, hostfile: str, args: list[str], fragment: str
) -> None:
    (tmp_path / "hf").write_text(hostfile)
    (tmp_path / "train.py").write_text("")
    result = cli(["--dry-run", "-H", "hf", *args, "train.py"])
    assert result.status == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel-launch: error: "), result.stderr
    assert fragment in lines[0]
    assert result.stdout == ""


@pytest.mark.timeout(60)
def test_a_10000_host_hostfile_is_read_selected_and_planned_in_a_few_seconds(cli: CliRunnerFn, tmp_path: Path) -> None:
    # Each ssh node gets its own row of the node table: the whole table in each of 10,000 commands was
    # 2.5 GB of plan and a minute of work.
    (tmp_path / "hostfile").write_text("".join(f"host{index} slots=8\n" for index in range(10000)))
    (tmp_path / "train.py").write_text("")
    started = time.monotonic()
    result = cli(["--dry-run", "-H", "hostfile", "train.py"])
    seconds = time.monotonic() - started
    assert result.status == 0, result.stderr
    commands = [value for label, value in result.plan() if label.startswith("node ") and label.endswith(" command")]
    assert len(commands) == 10000 and max(map(len, commands)) < 20000
    assert seconds < 10


def test_the_plan_names_the_variables_sent_to_the_nodes_without_their_values(
    cli: CliRunnerFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith(("NCCL", "PYTHON", "UCX", "MV2", "MLFLOW"))]:
        monkeypatch.delenv(name)
    (tmp_path / ".deepspeed_env").write_text("FROM_DS_ENV=secret-one\n")
    result = dry_run(cli, tmp_path, ["--export", "MY_TOKEN", "train.py"],
                     env={"NCCL_SOCKET_IFNAME": "eth7", "MY_TOKEN": "secret-two", "NOT_SENT": "x"})
    assert result.row("sent to nodes") == "NCCL_SOCKET_IFNAME, FROM_DS_ENV, MY_TOKEN"
    env, _ = split_env(remote_words(result.row("node 0 command")))
    assert (env["NCCL_SOCKET_IFNAME"], env["FROM_DS_ENV"], env["MY_TOKEN"]) == ("eth7", "secret-one", "secret-two")
    assert "NOT_SENT" not in env


@pytest.mark.parametrize(("args", "env", "path"), [
    (["train.py"], {}, "direct: each node's launcher starts its ranks itself (a fixed node count, each node's rank "
     "and rank count known before it starts, no restarts); global rank 0 hosts the store on node 0, at h1:29500"),
    (["--max-restarts", "1", "train.py"], {},
     "engine: torch elastic's agent starts the ranks (--max-restarts above 0)"),
    (["--rdzv-endpoint", "h9:29400", "train.py"], {}, "engine: torch elastic's agent starts the ranks (several nodes "
     "meeting at a rendezvous endpoint, where a node learns its rank only there)"),
    (["train.py"], {"ACCEL_LAUNCH_PATH": "engine"}, "engine: torch elastic's agent starts the ranks "
     "(ACCEL_LAUNCH_PATH=engine)"),
], ids=["direct", "restarts", "users-endpoint", "forced"])
def test_the_heads_plan_says_which_path_every_node_takes_and_why(cli: CliRunnerFn, tmp_path: Path, args: list[str],
                                                                 env: dict[str, str], path: str) -> None:
    assert dry_run(cli, tmp_path, args, env=env).row("launch path") == path


@pytest.mark.parametrize("env", [{}, {"ACCEL_COMPILE_CACHE_SECRET": "my-own-secret-of-16+"}], ids=["made", "given"])
def test_the_plan_shows_the_jobs_secret_sent_to_every_node_as_a_placeholder(
        cli: CliRunnerFn, tmp_path: Path, env: dict[str, str]) -> None:
    result = dry_run(cli, tmp_path, ["--export", "ACCEL_COMPILE_CACHE_SECRET", "train.py"] if env else ["train.py"],
                     env=env)
    commands = [value for label, value in result.plan() if label.startswith("node ") and label.endswith(" command")]
    sent = [split_env(remote_words(command))[0] for command in commands]
    secrets = {sent_job(words).job_env.get("ACCEL_COMPILE_CACHE_SECRET") or words.get("ACCEL_COMPILE_CACHE_SECRET")
               for words in sent}
    assert secrets == {"<secret>"}
    assert "my-own-secret" not in result.stdout
