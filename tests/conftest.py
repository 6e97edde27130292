"""Session-wide: every launch the tests make keeps its backend cache in a temp dir, not in ~/.cache; the
`launch` fixture that runs the real `accel-launch` in a subprocess for any test folder; and the slow lane:
every test in a folder where the real process is the point is marked `slow` (`pytest -m "not slow"` leaves
them out); a slow test elsewhere carries `@pytest.mark.slow` itself. Slow tests run first."""

from __future__ import annotations

import compileall
import getpass
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests import launches
from tests.launches import ACCEL_LAUNCH, CliRun, CliRunnerFn, Launch, Launcher, clean_environ
from tests.shared_results import shared_folder


SLOW_FOLDERS = ("faults", "jobs", "deepspeed", "multinode/hosts", "multinode/engines")
PROJECT_FOLDERS = ("launcher", "accelerators", "tests")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's modules once, before the workers start: where PYTHONDONTWRITEBYTECODE is set (CI
    machines set it), each of the suite's launchers and ranks would compile every module it imports again.

    And give SIGINT and SIGQUIT their defaults back where the suite was started with them ignored (a script's
    background job, as a shell without job control starts it): every launch inherits them, and a launcher keeps an
    ignored stop signal ignored (docs/RELIABILITY.md, "Every signal has one outcome"), so every test of what Ctrl-C
    or SIGQUIT does would fail. The test of that rule ignores one in its own launch (tests/faults/test_faults.py)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    if not hasattr(config, "workerinput"):
        root = Path(__file__).resolve().parent.parent
        for folder in PROJECT_FOLDERS:
            compileall.compile_dir(root / folder, quiet=2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under one of SLOW_FOLDERS `slow`, and run the slow tests first: the many short in-process
    tests then fill the last minutes of `-n 2`, where a long launch would leave one worker idle waiting for it."""
    tests_root = Path(__file__).parent
    slow_roots = [tests_root / folder for folder in SLOW_FOLDERS]
    for item in items:
        if any(root in item.path.parents for root in slow_roots):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the order within each kept


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point XDG_CACHE_HOME, XDG_CONFIG_HOME and TMPDIR (inherited by every launcher subprocess) at temp dirs of the
    session: what a job keeps there on purpose (a failed job's stack dumps, the user's compile key of nodes started
    one by one) stays with the session's, not in the machine's /tmp or the user's home.

    torch's own inductor cache in that TMPDIR (`torchinductor_<user>`: compiled graphs and kernels, the CPU's vector
    probes, the precompiled header) is one folder for every xdist worker of the session, so that each worker does
    not compile the same kernels cold again. A test about cold compiling names a TORCHINDUCTOR_CACHE_DIR of its own
    (tests/rank/compile_cache/); inductor locks and writes its cache for processes that share it, as a node's ranks
    do."""
    made = {"XDG_CACHE_HOME": "cache-home", "XDG_CONFIG_HOME": "config-home", "TMPDIR": "tmp"}
    previous = {name: os.environ.get(name) for name in made}
    for name, folder in made.items():
        os.environ[name] = str(tmp_path_factory.mktemp(folder))
    inductor = shared_folder(tmp_path_factory).parent / "torchinductor-shared"
    inductor.mkdir(exist_ok=True)
    (Path(os.environ["TMPDIR"]) / f"torchinductor_{_user()}").symlink_to(inductor, target_is_directory=True)
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _user() -> str:
    """The user name in torch's default inductor cache folder (torch/_inductor/runtime/cache_dir_utils.py)."""
    try:
        name = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        name = f"uid_{os.getuid()}"
    return re.sub(r'[\\/:*?"<>|]', "_", name)


@pytest.fixture(params=["direct", "engine"])
def launch_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once on each launch path (docs/ARCHITECTURE.md, "Two paths"): as the launcher chooses (the
    direct path for one node without restarts), and with ACCEL_LAUNCH_PATH=engine (torch elastic's agent).

    Only a test where the path can matter asks for it: what the driver of the rank group does (the rendezvous,
    restarts, signals to the launcher and those passed on to the ranks, --timeout and stops, rank exits, failure
    summaries and error files, output and the --log-dir layout, who hosts the store, the variables the ranks get,
    the stacks taken before a stop). What ends before a path is chosen (arguments, backend resolution, .env files,
    ds_config, a refusal, a dry run), what a rank does alone (its bootstrap, the compile hook and cache, the
    DeepSpeed and HF bridges), and a test whose flags take it to the engine anyway, runs once, as the launcher
    chooses. Of cases handled alike by one rule, or by the job scope both paths share (the keeper, the reaper, the
    sweep), the engine path takes one of each kind (of signals, one per outcome).
    A module asks for it with `pytestmark = pytest.mark.usefixtures("launch_path")` or per test; a test of such a
    module that runs once takes `@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)`."""
    if request.param == "engine":
        monkeypatch.setitem(launches.LAUNCH_PATH, "ACCEL_LAUNCH_PATH", "engine")
    return request.param


@pytest.fixture
def launch(tmp_path: Path) -> Launcher:
    """Run `python -m launcher ARGS` (or the `accel-launch` console script, which a user types) in `cwd`
    (default: a fresh temp dir) and return the Launch."""

    def run(args: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 90, console_script: bool = False) -> Launch:
        record_dir = tmp_path / "records"
        record_dir.mkdir(exist_ok=True)
        environ = clean_environ({"RECORD_DIR": str(record_dir), **(env or {})})
        work = cwd or tmp_path
        program = [ACCEL_LAUNCH] if console_script else [sys.executable, "-m", "launcher"]
        done = subprocess.run([*program, *args], cwd=work, env=environ,
                              capture_output=True, text=True, timeout=timeout)
        return Launch(done.returncode, done.stdout, done.stderr, record_dir)

    return run


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunnerFn:
    """Run the `accel-launch` click command in this process (CliRunner), in `tmp_path`, with no ACCEL_* setting
    of the developer's: for `--dry-run` and the errors that end a launch before it starts (a real run ends in
    os._exit, which would end the test process)."""
    from click.testing import CliRunner

    from launcher import signal_rules
    from launcher.cli.command import accel_launch

    monkeypatch.chdir(tmp_path)

    def started_a_job(status: int) -> None:
        raise AssertionError(f"the in-process command ran a job (status {status}): give --dry-run or a bad input")

    # A launch that is not refused ends in os._exit, which would end pytest itself, perhaps with status 0.
    monkeypatch.setattr(os, "_exit", started_a_job)
    # `stacks` and `status` give a stop signal their own outcome: the next test's is put back.
    monkeypatch.setattr(signal_rules._Now, "stop", signal_rules._Now.stop)

    def run(args: Sequence[str], env: Mapping[str, str] | None = None) -> CliRun:
        unset: dict[str, str | None] = {key: None for key in os.environ if key.startswith("ACCEL_")}
        result = CliRunner().invoke(accel_launch, list(args), env={**unset, **(env or {})},
                                    prog_name="accel-launch")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return CliRun(result.exit_code, result.stdout, result.stderr)

    return run
