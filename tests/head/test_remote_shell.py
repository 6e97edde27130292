"""The remote command string of the ssh and pdsh runners: every argument and value survives a real POSIX shell
verbatim."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.head.runners import PdshRunner, SshRunner

ECHO_ARGV = [sys.executable, "-c", "import sys, json, os; print(json.dumps([sys.argv[1:], os.environ.get('V')]))"]
NASTY = ["a b", "it's", 'say "hi"', "$HOME", "`id`", "a;b", "x && y", "line1\nline2", "ünï ☃", "%n %h %%", "", "-x", "*"]


def run_remote(shell: str, command: str) -> list:
    env = {**os.environ, "PYTHONUTF8": "1", "HOME": "/should-not-appear"}
    out = subprocess.run([shell, "-c", command], capture_output=True, text=True, env=env, check=True, timeout=30)
    return json.loads(out.stdout)


def test_arguments_and_values_with_shell_syntax_arrive_verbatim_through_bash(tmp_path) -> None:
    work = tmp_path / "dir with 'quote' and $x"
    work.mkdir()
    command = SshRunner.remote(str(work), {"V": "$HOME;`id` 'q'"}, [*ECHO_ARGV, *NASTY])
    assert run_remote("bash", command) == [NASTY, "$HOME;`id` 'q'"]


def test_the_command_changes_to_the_working_directory_first(tmp_path) -> None:
    command = SshRunner.remote(str(tmp_path), {}, [sys.executable, "-c", "import os, json; print(json.dumps(os.getcwd()))"])
    assert run_remote("sh", command) == str(tmp_path)


def test_a_missing_working_directory_fails_instead_of_running_elsewhere(tmp_path) -> None:
    command = SshRunner.remote(str(tmp_path / "gone"), {}, ["true"])
    assert subprocess.run(["sh", "-c", command], capture_output=True).returncode != 0


arguments = st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))), max_size=6)


@settings(max_examples=60, deadline=None)
@given(arguments)
def test_any_argument_list_survives_a_real_sh(args: list[str]) -> None:
    assert run_remote("sh", SshRunner.remote("/", {}, [*ECHO_ARGV, *args])) == [args, None]


def pdsh_expand(command: str, host: str, rank: int) -> str:
    """What pdsh does to its command string (%h host, %u user, %n rank, %% a '%', other %x unchanged)."""
    out, index = [], 0
    while index < len(command):
        char = command[index]
        if char == "%" and index + 1 < len(command):
            code = command[index + 1]
            out.append({"h": host, "u": "user", "n": str(rank), "%": "%"}.get(code, "%" + code))
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def test_pdsh_escaping_doubles_every_percent() -> None:
    assert PdshRunner.escape("50% %n %%h") == "50%% %%n %%%%h"


def test_after_pdsh_expansion_arguments_arrive_verbatim_and_the_host_is_filled_in() -> None:
    script = "import sys, json, os; print(json.dumps([sys.argv[1:], os.environ['ACCEL_NODE_HOST'], os.environ['V']]))"
    command = PdshRunner.remote("/", {"V": "100%n"}, [sys.executable, "-c", script, *NASTY])
    assert run_remote("sh", pdsh_expand(command, "node-b", 1)) == [NASTY, "node-b", "100%n"]


@settings(max_examples=40, deadline=None)
@given(arguments)
def test_any_argument_list_survives_pdsh_expansion_and_a_real_sh(args: list[str]) -> None:
    command = pdsh_expand(PdshRunner.remote("/", {}, [*ECHO_ARGV, *args]), "h", 0)
    assert run_remote("sh", command) == [args, None]


@pytest.mark.parametrize("word", ["%", "a%", "%%%"])
def test_a_lone_or_trailing_percent_never_reaches_pdsh_unescaped(word: str) -> None:
    command = PdshRunner.remote("/", {}, [word])
    assert "%h" in command and command.replace("%%", "").count("%") == 1
