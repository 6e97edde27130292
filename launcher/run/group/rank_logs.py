"""Where each rank's output goes, in a layout of torch elastic's kind, on both launch paths.

A layout is a `LogsDest` of torch's (`default_layout` makes the default one without torch; on the
engine path a `--logs-specs` plugin's `reify` makes it): for each rank, the file of each stream ("" leaves
it to the terminal), the streams teed (their file and the terminal) and its error file. A teed stream is a
pipe the launcher copies, chunk by chunk, to its file and to the terminal, each line under its prefix
(launcher/run/group/terminal_lines.py, output_copy.py); a line that holds one of --duplicate-*-filters goes to the
layout's filtered file too, under torch's header, as torch's does.

torch elastic's default log layout, made without torch (`default_layout`, the direct path's; the engine path's is
torch's own `DefaultLogsSpecs`, which gives the same folders and files):

`LOG_ROOT/<run id>_XXXXXXXX/attempt_0/<local rank>/{stdout.log, stderr.log, error.json}`: a redirected stream
goes to its file only; a teed one to its file and the terminal; any other is the terminal's. Streams the user
leaves alone are handled as on the engine path (the node's plan: `NodePlan.streams`). A rank left out
by --local-ranks-filter writes its files only, and nothing of it reaches the terminal.

Prefixes as torchrun's (`line_prefix`): a stream the user teed (`--tee`) is shown as torchrun shows it: every
line under torch elastic's own header, `[{role}{local_rank}]:` (`[default0]:`). The stderr we tee ourselves (kept
for the failure summary) gets one `[rankN]:` per line of a multi-rank job, never doubled when torch already wrote
`[rankN]:` itself, and none for a one-rank job. The stdout we tee for --log-dir is shown bare, as without the flag.
A template in torchrun's variable is used as it is, as torchrun does.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import IO, Any

from launcher.contract.job_config import STDOUT, NodePlan
from launcher.run.group.output_copy import OutputCopies
from launcher.run.group.terminal_lines import RankLines, terminal

__all__ = ["FilteredLines", "RankLogs", "LogLayout", "append_to", "default_layout", "line_prefix", "torch_header"]


class RankLogs:
    """One attempt's streams: `popen_streams` for each rank, `start_copies` once it runs, `finish` after."""

    def __init__(self, plan: NodePlan, layout: Any) -> None:
        self._plan, self._layout = plan, layout
        self._opened: list[IO[bytes]] = []
        self._copies = OutputCopies()
        engine = plan.job.settings.engine
        self._filtered: dict[int, tuple[IO[bytes], tuple[str, ...]]] = {}
        for fd, filters, path in ((1, engine.duplicate_stdout_filters, getattr(layout, "filtered_stdout", "")),
                                  (2, engine.duplicate_stderr_filters, getattr(layout, "filtered_stderr", ""))):
            if filters and path:
                self._filtered[fd] = (self._open(path), filters)

    def error_file(self, local_rank: int) -> str | None:
        """The error file the layout gives the rank (None: none)."""
        return self._layout.error_files.get(local_rank) or None

    def stderr_log(self, local_rank: int) -> Path | None:
        """The file that holds the rank's stderr, if the layout keeps one."""
        path = self._layout.stderrs.get(local_rank)
        return Path(path) if path else None

    def stderr_shown_under(self, local_rank: int) -> str | None:
        """The prefix the rank's stderr reached the terminal under, as it came ("" for none); None when it did
        not reach it (redirected to its file, or left out by --local-ranks-filter)."""
        if local_rank in self._layout.tee_stderrs:
            return line_prefix(self._plan, local_rank, 2).decode("utf-8", "replace")
        return "" if not self._layout.stderrs.get(local_rank) else None

    def popen_streams(self, local_rank: int) -> tuple[object, object]:
        """The rank's stdout and stderr for Popen: a pipe for a teed stream, its file, or the terminal (None)."""
        return self._popen_stream(local_rank, 1), self._popen_stream(local_rank, 2)

    def _popen_stream(self, local_rank: int, fd: int) -> object:
        layout = self._layout
        if local_rank in (layout.tee_stdouts if fd == 1 else layout.tee_stderrs):
            return subprocess.PIPE
        path = (layout.stdouts if fd == 1 else layout.stderrs).get(local_rank)
        return self._open(path) if path else None

    def _open(self, path: str) -> IO[bytes]:
        """The file at `path` to append to; where it cannot be (a rank put a FIFO there), the null device, said."""
        try:
            handle = append_to(path)
        except OSError as exc:
            terminal(2).note(f"the log {path} is not written: {exc.strerror or exc}")
            handle = append_to(os.devnull)
        self._opened.append(handle)
        return handle

    def start_copies(self, local_rank: int, process: subprocess.Popen) -> None:
        """Copy a rank's piped streams to their files and the terminal, each line under its prefix."""
        for pipe, fd in ((process.stdout, 1), (process.stderr, 2)):
            if pipe is None:
                continue
            teed = (self._layout.tee_stdouts if fd == 1 else self._layout.tee_stderrs)[local_rank]
            what = f"rank {self._plan.global_rank(local_rank)}'s log {teed}"
            try:
                log: IO[bytes] | None = append_to(teed)  # the copy closes it at the stream's end
            except OSError as exc:
                log = None
                terminal(2).note(f"{what} is not written: {exc.strerror or exc} (the terminal still shows it)")
            prefix = line_prefix(self._plan, local_rank, fd)
            lines: list[RankLines | FilteredLines] = [RankLines(terminal(fd), prefix)]
            if fd in self._filtered:
                lines.append(FilteredLines(*self._filtered[fd], torch_header(self._plan, local_rank)))
            self._copies.copy_pipe(pipe, log, lines, what, terminal(2))

    def finish(self, seconds: float) -> None:
        """Wait up to `seconds` for the copies to reach the end of their pipes, then close the files."""
        self._copies.finish(seconds)
        for handle in self._opened:
            handle.close()
        self._opened.clear()


def line_prefix(plan: NodePlan, local_rank: int, stream: int) -> bytes:
    """The prefix of every line of local rank `local_rank`'s stream (1 stdout, 2 stderr) on the terminal."""
    role = plan.job.settings.engine.role
    teed = plan.tee_asked[local_rank] & stream
    if stream == STDOUT and not teed:  # the copy --log-dir keeps: the terminal shows what it shows without it
        text = ""
    elif plan.prefix_template:
        text = torch_header(plan, local_rank).decode("utf-8", "replace")
    elif teed:
        text = f"[{role}{local_rank}]:"
    elif plan.job.node_range[1] * plan.local_world_size > 1:
        text = f"[rank{plan.global_rank(local_rank)}]:"
    else:
        text = ""
    return text.encode("utf-8", "replace")


def torch_header(plan: NodePlan, local_rank: int) -> bytes:
    """torch's own header of a teed line: `[{role}{local_rank}]:`, or torchrun's template."""
    role = plan.job.settings.engine.role
    text = (Template(plan.prefix_template).safe_substitute(role_name=role, rank=plan.global_rank(local_rank),
                                                           local_rank=local_rank)
            if plan.prefix_template else f"[{role}{local_rank}]:")
    return text.encode("utf-8", "replace")


def append_to(path: str) -> IO[bytes]:
    """`path` opened to append, unbuffered, without ever blocking: a regular file (made 0600 if new, through no
    link) or the null device; anything else a rank can put in a log's place (a FIFO, a folder) is an OSError."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags if path == os.devnull else flags | os.O_NOFOLLOW, 0o600)
    if path != os.devnull and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab", buffering=0)


class FilteredLines:
    """One rank's teed stream as torch's --duplicate-*-filters keep it: each whole line that holds one of
    `needles`, under `header`, in the shared filtered file."""

    def __init__(self, file: IO[bytes], needles: tuple[str, ...], header: bytes) -> None:
        self._file, self._needles, self._header = file, needles, header
        self._pending = b""
        self.waiting = False  # nothing of a line is ever shown before its end

    def feed(self, chunk: bytes) -> None:
        """Write the whole lines `chunk` completes that hold a needle."""
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            if any(needle in line.decode("utf-8", "replace") for needle in self._needles):
                try:
                    self._file.write(self._header + line + b"\n")
                except (OSError, ValueError):  # a full disk, or the file closed: the rank's stream still drains
                    pass

    def quiet(self) -> None:
        """An unfinished line waits for its end."""

    def close(self) -> None:
        """The stream ended: its last line counts if it holds a needle."""
        if self._pending:
            self.feed(b"\n")


@dataclass
class LogLayout:
    """Each rank's destinations, by local rank, with the field names of torch's `LogsDest` ("": the terminal)."""

    stdouts: dict[int, str] = field(default_factory=dict)
    stderrs: dict[int, str] = field(default_factory=dict)
    tee_stdouts: dict[int, str] = field(default_factory=dict)
    tee_stderrs: dict[int, str] = field(default_factory=dict)
    error_files: dict[int, str] = field(default_factory=dict)
    filtered_stdout: str = ""
    filtered_stderr: str = ""


def default_layout(plan: NodePlan, log_root: Path) -> LogLayout:
    """The folders of one attempt under `log_root`, made now, and each rank's files in them."""
    attempt = Path(tempfile.mkdtemp(prefix=f"{plan.run_id}_", dir=log_root)) / "attempt_0"
    shown = set(plan.job.settings.engine.local_ranks_filter) or None
    layout = LogLayout(filtered_stdout=str(attempt / "filtered_stdout.log"),
                       filtered_stderr=str(attempt / "filtered_stderr.log"))
    for local_rank, (redirected, teed) in enumerate(plan.streams):
        folder = attempt / str(local_rank)
        folder.mkdir(parents=True)
        for bit, files, tees in ((1, layout.stdouts, layout.tee_stdouts), (2, layout.stderrs, layout.tee_stderrs)):
            files[local_rank] = str(folder / f"{'stdout' if bit == 1 else 'stderr'}.log") if (redirected | teed) & bit \
                else ""
            if teed & bit and (shown is None or local_rank in shown):
                tees[local_rank] = files[local_rank]
            elif not files[local_rank] and shown is not None and local_rank not in shown:
                files[local_rank] = os.devnull
        layout.error_files[local_rank] = str(folder / "error.json")
    return layout
