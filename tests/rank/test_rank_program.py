"""How each rank runs the user's program: `__main__` semantics, `-m`, `--no-python`, and the example job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.contract.names import PARENT_DEATH_SIGNAL
from tests.launches import RECORD_RANK, SCRIPTS, CliRunnerFn, Launcher

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_script_runs_as_main_like_python_script_py(launch: Launcher) -> None:
    result = launch(["--nproc-per-node", "2", str(RECORD_RANK), "--flag", "a b", "$HOME"])
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert set(records) == {0, 1}
    for rank, record in records.items():
        assert record["name"] == "__main__"
        assert record["file"] == str(RECORD_RANK)
        assert record["argv"] == [str(RECORD_RANK), "--flag", "a b", "$HOME"]
        assert record["path0"] == str(SCRIPTS)
        assert record["pickled_square_of_7"] == 49
        env = record["env"]
        assert (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"]) == (str(rank), str(rank), "0")
        assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == ("2", "2")
        assert env["MASTER_ADDR"] and int(env["MASTER_PORT"]) > 0
        assert env["ACCEL_ACCELERATOR"] == "cpu"
        assert env["OMP_NUM_THREADS"] is not None and int(env["OMP_NUM_THREADS"]) >= 1


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_module_runs_with_dash_m(launch: Launcher) -> None:
    result = launch(["--compile-backend", "eager", "-m", "record_rank", "x"], env={"PYTHONPATH": str(SCRIPTS)})
    assert result.returncode == 0, result.stderr
    record = result.records()[0]
    assert record["name"] == "__main__"
    assert record["argv"] == [str(RECORD_RANK), "x"]
    assert record["default_backend"] == "eager"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_no_python_validates_then_execs_the_program(launch: Launcher, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = launch(["--no-python", "sh", "-c", f'echo "$ACCEL_COMPILE_BACKEND $RANK" > {marker}'])
    assert result.returncode == 0, result.stderr
    assert marker.read_text().strip() == "inductor 0"


def test_no_python_is_validated_before_the_program_could_run(cli: CliRunnerFn, tmp_path: Path) -> None:
    refused = cli(["--compile-backend", "nope", "--no-python", "sh", "-c", f"touch {tmp_path / 'never'}"])
    assert refused.status == 2 and "'nope' (from --compile-backend)" in refused.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_example_trains_on_two_ranks_with_inductor(launch: Launcher) -> None:
    result = launch(["--nproc-per-node", "2", "--compile-backend", "inductor", str(REPO / "examples/train.py"),
                     "--steps", "6"], timeout=280)
    assert result.returncode == 0, result.stderr
    used = [line for line in result.stdout.splitlines() if "compile backend" in line]
    assert sorted(line.split(":")[0] for line in used) == ["rank 0/2", "rank 1/2"], result.stdout
    assert all("'inductor' (from --compile-backend)" in line for line in used)
    losses = [float(line.rsplit(" ", 1)[1]) for line in result.stdout.splitlines() if line.startswith("step ")]
    assert len(losses) == 2 and losses[1] < losses[0]


def test_the_example_reads_its_backend_from_the_ds_config_it_is_given(cli: CliRunnerFn) -> None:
    result = cli(["--dry-run", str(REPO / "examples/train.py"), "--deepspeed_config",
                  str(REPO / "examples/ds_config.json")])
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"aot_eager (from ds_config {REPO / 'examples/ds_config.json'})"


def test_the_bootstrap_does_not_import_click() -> None:
    import subprocess

    code = "import sys, launcher.rank.bootstrap; print('click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("env", "program", "why"), [
    ({"ACCEL_CPU_BINDING": "0;x"}, ["script", str(RECORD_RANK)],
     "invalid value for ACCEL_CPU_BINDING: 'x' (expected a whole number"),
    ({"ACCEL_COMPILE_BACKEND": "eager"}, ["exec", "./prog"], "cannot run './prog' (--no-python): Exec format error"),
])
def test_a_rank_that_cannot_start_refuses_in_one_line_with_exit_2(env: dict[str, str], program: list[str], why: str,
                                                                  tmp_path: Path) -> None:
    prog = tmp_path / "prog"
    prog.write_text("echo no #! line and not ELF: exec cannot run it\n")
    prog.chmod(0o755)
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("ACCEL_", "TORCHELASTIC_"))}
    result = subprocess.run([sys.executable, "-P", "-m", "launcher.rank.bootstrap", *program],
                            env={**environ, "RANK": "0", **env}, cwd=tmp_path, capture_output=True, text=True,
                            timeout=50)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [result.stderr.strip()] and "refused to start: " + why in result.stderr


FORK_PROBE = """
import json, os, signal, sys, threading
parent_death = int(sys.argv[1])
read, write = os.pipe()
child = os.fork()
if child == 0:
    os.write(write, json.dumps([signal.getsignal(parent_death) == signal.SIG_DFL, threading.active_count()]).encode())
    os._exit(0)
os.waitpid(child, 0)
child_default, child_threads = json.loads(os.read(read, 64))
facts = {"sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
         "parent_death_handled": callable(signal.getsignal(parent_death)),
         "launcher_watched": [thread.name for thread in threading.enumerate()].count("accel-launcher-watch"),
         "child_parent_death_default": child_default, "child_threads": child_threads}
print("facts:", json.dumps(facts), flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigterm_keeps_its_default_in_a_rank_and_the_launchers_death_watch_stays_out_of_its_forks(
        launch: Launcher, tmp_path: Path) -> None:
    # launcher/rank/launcher_link.py: the parent-death handler and the launcher's watch, in the rank only; a
    # forked child has the default handler and no thread of ours.
    (tmp_path / "fork_probe.py").write_text(FORK_PROBE)
    result = launch([str(tmp_path / "fork_probe.py"), str(int(PARENT_DEATH_SIGNAL))])
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "facts: " in line)
    assert json.loads(line.split("facts: ", 1)[1]) == {
        "sigterm_default": True, "parent_death_handled": True, "launcher_watched": 1,
        "child_parent_death_default": True, "child_threads": 1}


@pytest.mark.timeout(120)
def test_a_script_is_compiled_as_python_compiles_it_without_the_launchers_future_imports(launch: Launcher,
                                                                                         tmp_path: Path) -> None:
    (tmp_path / "annotated.py").write_text("def f(x: int) -> None:\n    pass\nprint('annotations', f.__annotations__)\n")
    result = launch(["--compile-backend", "eager", "annotated.py"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "annotations {'x': <class 'int'>, 'return': None}\n"  # strings under PEP 563
