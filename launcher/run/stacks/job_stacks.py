"""A node's ranks' stacks as the launcher takes them itself (docs/CONTRACT.md section 8): before it stops ranks at
--timeout, or because one rank failed while others still ran, it asks each running rank for its stacks, prints the
summary, and keeps the full dumps in a file it names: in the log folder with --log-dir, else a private file (0600)
in the temp dir, which outlives the job. At each attempt's end, a rank whose count of compiled graphs differs from
the others' is named in one line.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from launcher.contract.hosts import this_host
from launcher.contract.names import STACKS_DIR_VAR, STACKS_SIGNAL
from launcher.escaped import one_line
from launcher.rank.compile_state import read_compile_state
from launcher.run.stacks.rank_answers import RankAnswer, ask_ranks
from launcher.run.stacks.stack_report import program_dump, ranks_text, stack_lines, summary_lines
from launcher.run.group.terminal_lines import terminal
from launcher.signal_rules import signal_name

__all__ = ["JobStacks", "dump_file_text"]


class JobStacks:
    """The folder the ranks answer in (made 0700 inside the launcher's private log folder) and what is said."""

    def __init__(self, private: Path, keep_in: Path | None) -> None:
        """The ranks answer in `private`/stacks; a report's full dumps are kept in `keep_in`/stacks (--log-dir),
        else in a file of the temp dir."""
        self.folder = private / "stacks"
        self.folder.mkdir(mode=0o700, exist_ok=True)
        self._keep_in = keep_in / "stacks" if keep_in is not None else None

    def environment(self) -> dict[str, str]:
        """What each rank needs to answer: the folder."""
        return {STACKS_DIR_VAR: str(self.folder)}

    def report(self, ranks: Mapping[int, int], why: str) -> None:
        """Ask the running `ranks` (global rank -> pid) for their stacks and print what they say, before they are
        stopped for `why`."""
        if not ranks:
            return
        try:
            answers = ask_ranks(ranks, self.folder)
            summary = summary_lines(answers)
            saved = self._save(answers, why)
        except Exception as exc:  # noqa: BLE001  (a report that failed must not keep the ranks from being stopped)
            terminal(2).note(one_line(f"note: the ranks' stacks could not be taken: {type(exc).__name__}: {exc}"))
            return
        kept = f"full dumps in {saved}" if saved is not None else "the full dumps could not be kept"
        lines = [f"the stacks of the {len(ranks)} running rank(s) on {this_host()}, taken as {why}, before "
                 f"they are stopped ({kept}):", *(f"  {line}" for line in summary)]
        terminal(2).note("\n".join(one_line(line) for line in lines))

    def compile_note(self, ranks: Iterable[int]) -> str | None:
        """`rank 1 compiled 3 graph(s), the others 2 each`, naming only the ranks that compiled MORE than the usual
        count (the commonest; of two equally common, the smaller); None when no rank did."""
        counts = {rank: _graphs(read_compile_state(self.folder, rank)) for rank in ranks}
        if len(counts) < 2:
            return None
        usual = min(Counter(counts.values()).most_common(), key=lambda pair: (-pair[1], pair[0]))[0]
        more = sorted(rank for rank, count in counts.items() if count > usual)
        if not more:
            return None
        said = ", ".join(f"{counts[rank]}" for rank in more)
        least = min(counts.values())
        others = f"{usual} each" if least == usual else f"{least} to {usual}"
        return (f"{ranks_text(more)} compiled {said} graph(s), the other ranks {others}: code the others "
                "did not run, or a recompile (TORCH_LOGS=recompiles says which), and while a rank compiles alone its "
                "peers wait for it in their next collective")

    def _save(self, answers: Sequence[RankAnswer], why: str) -> Path | None:
        """The full dumps in a new file (O_EXCL: never one a rank put at a name it could guess, a FIFO or a link)."""
        text = dump_file_text(answers, why).encode("utf-8", "replace")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        try:
            if self._keep_in is not None:
                self._keep_in.mkdir(mode=0o700, exist_ok=True)
                fd, name = tempfile.mkstemp(prefix=f"stacks-{stamp}-", suffix=".txt", dir=self._keep_in)
            else:
                fd, name = tempfile.mkstemp(prefix=f"accel-stacks-{stamp}-", suffix=".txt")
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
        except OSError:
            return None
        return Path(name)


def dump_file_text(answers: Sequence[RankAnswer], why: str) -> str:
    """The full dumps: the summary, the grouped stacks, then each rank's dump as faulthandler wrote it."""
    parts = [f"accel-launch: {why}: stacks of {len(answers)} rank(s) on {this_host()}, asked with "
             f"{signal_name(STACKS_SIGNAL)}", "", *summary_lines(answers), "", *stack_lines(answers), ""]
    for answer in answers:
        dump = program_dump(answer.dump) if answer.dump is not None else f"no stack: {answer.silent}"
        parts += [f"=== rank {answer.rank} (pid {answer.pid}) ===", dump, ""]
    return "\n".join(parts)


def _graphs(state: Mapping[str, object] | None) -> int:
    count = state.get("graphs") if state is not None else 0
    return count if isinstance(count, int) else 0
