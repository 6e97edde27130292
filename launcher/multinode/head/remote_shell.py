"""The one string a remote POSIX shell runs for a node: `cd CWD && exec [PREFIX...] env K=V ... ARGV...`.

Every word is quoted with `shlex.quote`, so arguments with spaces, quotes, `$`, `;`, newlines or any other
character reach the node launcher exactly as given. `exec` makes the node launcher replace the remote
shell, so signals from sshd reach it directly. The remote login shell must be POSIX (sh, bash, dash, zsh).

pdsh rewrites the command string before its ssh runs it: `%h`, `%u`, `%n` become the target host, the
remote user and the host's index, `%%` becomes `%`, and any other `%x` stays as it is (a trailing lone
`%` is undefined). `pdsh_shell_command` therefore doubles every `%` of ours and adds one unescaped
`ACCEL_NODE_HOST=%h`, which pdsh fills with the host exactly as given to `-w`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from launcher.contract.names import NODE_HOST_VAR

__all__ = ["shell_command", "pdsh_shell_command", "pdsh_escape"]


def shell_command(cwd: str, env: Mapping[str, str], argv: Sequence[str], prefix: Sequence[str] = ()) -> str:
    """The remote command line for ssh: change to `cwd`, exec `prefix` (a command that runs the rest), set `env`,
    exec `argv`."""
    return _command(cwd, env, argv, escape=str, fill=(), prefix=prefix)


def pdsh_shell_command(cwd: str, env: Mapping[str, str], argv: Sequence[str], prefix: Sequence[str] = ()) -> str:
    """As `shell_command`, escaped for pdsh, with `ACCEL_NODE_HOST=%h` for pdsh to fill in."""
    return _command(cwd, env, argv, escape=pdsh_escape, fill=(f"{NODE_HOST_VAR}=%h",), prefix=prefix)


def pdsh_escape(text: str) -> str:
    """`text` as pdsh must be given it to pass it on unchanged."""
    return text.replace("%", "%%")


def _command(cwd: str, env: Mapping[str, str], argv: Sequence[str], escape: Callable[[str], str],
             fill: Sequence[str], prefix: Sequence[str]) -> str:
    assignments = [f"{name}={value}" for name, value in env.items()]
    words = [escape(shlex.quote(word)) for word in assignments + list(argv)]
    first = [escape(shlex.quote(word)) for word in prefix]
    return " ".join([f"cd {escape(shlex.quote(cwd))} && exec", *first, "env", *fill, *words])
