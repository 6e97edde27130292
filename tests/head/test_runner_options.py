"""DeepSpeed's runner pass-through flags (--launcher_args, --comment, --account, --venv_script): the runner
commands built in-process, their argv asserted, and the remote command run by a real local `sh` (no ssh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.contract.hosts import NodeSpec
from launcher.errors import MultinodeError
from launcher.head.runner_options import SOURCE_THEN_EXEC, RunnerOptions
from launcher.head.runners import RUNNERS, OpenMpiRunner, PdshRunner, SlurmRunner, SshRunner
from tests.launches import CliRunnerFn

NODES = (NodeSpec("h1", (0,)), NodeSpec("h2", (0,)))
# What the "node launcher" of these tests does: print its argv and two variables, as JSON.
SHOW = [sys.executable, "-c", "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get('FROM_VENV'), "
        "os.environ.get('SENT')]))", "a b", "$HOME", "it's"]


def _venv(tmp_path: Path) -> Path:
    script = tmp_path / "my venv" / "activate"
    script.parent.mkdir()
    script.write_text("FROM_VENV='sourced; $(not run)'\nexport FROM_VENV\nSENT=from-venv\nexport SENT\n")
    return script


def _run_remote(remote: str, cwd: Path) -> list:
    done = subprocess.run(["sh", "-c", remote], capture_output=True, text=True, timeout=30, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_launcher_args_are_split_once_and_given_to_each_runner_as_arguments() -> None:
    options = RunnerOptions(launcher_args='-o "ProxyJump=a b" --x=1')
    words = ["-o", "ProxyJump=a b", "--x=1"]
    assert [runner(options).extra_args() for runner in RUNNERS.values()] == [words] * len(RUNNERS)
    ssh = SshRunner(options).commands(NODES, SHOW, {}, "/w")[0].argv
    assert ssh[5:9] == ("-o", "ProxyJump=a b", "--x=1", "h1")
    pdsh = PdshRunner(options).commands(NODES, SHOW, {}, "/w")[0].argv
    assert pdsh[:9] == ("pdsh", "-S", "-f", "1024", "-w", "h1,h2", "-o", "ProxyJump=a b", "--x=1")
    mpirun = OpenMpiRunner(options).commands(NODES, SHOW, {}, "/w")[0].argv
    assert mpirun[-len(SHOW) - 3:-len(SHOW)] == ("-o", "ProxyJump=a b", "--x=1")


def test_comment_and_account_go_to_srun_alone() -> None:
    options = RunnerOptions(launcher_args="--time 5", comment="a job; rm -rf /", account="acct")
    words = SlurmRunner(options).extra_args()
    assert words == ["--time", "5", "--comment", "a job; rm -rf /", "--account", "acct"]
    srun = SlurmRunner(options).commands(NODES, SHOW, {}, "/w")[0].argv
    assert srun[-len(SHOW) - 6:-len(SHOW)] == tuple(words)
    SlurmRunner(options).check()
    for runner in (SshRunner, PdshRunner, OpenMpiRunner):
        with pytest.raises(MultinodeError, match="--comment is srun's"):
            runner(RunnerOptions(comment="c")).check()
        with pytest.raises(MultinodeError, match="--account is srun's"):
            runner(RunnerOptions(account="a")).check()


@pytest.mark.parametrize(("given", "why"), [('a "b', "No closing quotation"), ("it's", "No closing quotation")])
def test_launcher_args_that_do_not_split_are_one_error(given: str, why: str) -> None:
    with pytest.raises(MultinodeError, match=why):
        SshRunner(RunnerOptions(launcher_args=given)).check()


def test_over_ssh_the_venv_script_is_sourced_then_the_sent_variables_win_and_every_word_arrives_intact(
    tmp_path: Path
) -> None:
    options = RunnerOptions(venv_script=str(_venv(tmp_path)))
    command = SshRunner(options).commands(NODES, SHOW, {"SENT": "from head"}, str(tmp_path))[0]
    argv, from_venv, sent = _run_remote(command.argv[-1], tmp_path)
    assert argv == ["a b", "$HOME", "it's"]
    assert from_venv == "sourced; $(not run)"
    assert sent == "from head"  # exported after the sourcing, as DeepSpeed does


def test_over_pdsh_the_same_command_after_pdsh_s_own_percent_rewriting(tmp_path: Path) -> None:
    options = RunnerOptions(venv_script=str(_venv(tmp_path)))
    remote = PdshRunner(options).commands(NODES, SHOW, {"SENT": "100%"}, str(tmp_path))[0].argv[-1]
    argv, from_venv, sent = _run_remote(remote.replace("%h", "h1").replace("%%", "%"), tmp_path)
    assert (argv, from_venv, sent) == (["a b", "$HOME", "it's"], "sourced; $(not run)", "100%")


def test_under_mpirun_and_srun_the_node_command_sources_the_script_without_a_shell_around_user_text(
    tmp_path: Path
) -> None:
    venv = _venv(tmp_path)
    wrapped = [*RunnerOptions(venv_script=str(venv)).wrapper(), *SHOW]
    assert wrapped[:4] == ["sh", "-c", SOURCE_THEN_EXEC, str(venv)]
    for runner in (OpenMpiRunner, SlurmRunner):
        argv = runner(RunnerOptions(venv_script=str(venv))).commands(NODES, SHOW, {}, "/w")[0].argv
        assert list(argv[-len(wrapped):]) == wrapped
    done = subprocess.run(wrapped, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert json.loads(done.stdout)[:2] == [["a b", "$HOME", "it's"], "sourced; $(not run)"]


def test_a_relative_venv_script_is_found_in_the_working_directory_not_on_path(tmp_path: Path) -> None:
    (tmp_path / "env.sh").write_text("FROM_VENV=here\nexport FROM_VENV\n")
    wrapped = [*RunnerOptions(venv_script="env.sh").wrapper(), *SHOW]
    done = subprocess.run(wrapped, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert json.loads(done.stdout)[1] == "here"


def test_the_command_line_sends_the_flags_to_the_runner(cli: CliRunnerFn, tmp_path: Path) -> None:
    (tmp_path / "hostfile").write_text("h1 slots=1\nh2 slots=1\n")
    (tmp_path / "train.py").write_text("")
    result = cli(["--dry-run", "-H", "hostfile", "--launcher", "slurm", "--launcher_args", "--time 5",
                  "--comment", "c d", "--account", "acct", "--venv_script", "v.sh", "train.py"])
    assert result.status == 0, result.stderr
    srun = result.row("runner command")
    assert "--time 5 --comment 'c d' --account acct sh -c '. \"$0\" && exec \"$@\"' ./v.sh " in srun


@pytest.mark.parametrize(("args", "words"), [
    (["--venv_script", "v.sh"], "--venv_script is not supported here: it needs --hostfile"),
    (["--launcher_args", "-x"], "--launcher_args is not supported here: it needs --hostfile"),
    (["-H", "hostfile", "--comment", "c"], "--comment is srun's"),
    (["-H", "hostfile", "--no_ssh", "--node-rank", "0", "--account", "a"], "--no_ssh starts no runner"),
])
def test_a_runner_flag_that_cannot_work_is_one_line_and_exit_2(
    cli: CliRunnerFn, tmp_path: Path, args: list[str], words: str
) -> None:
    (tmp_path / "hostfile").write_text("h1 slots=1\nh2 slots=1\n")
    (tmp_path / "train.py").write_text("")
    result = cli(["--dry-run", *args, "train.py"])
    assert result.status == 2
    line, = result.stderr.splitlines()
    assert words in line, line
