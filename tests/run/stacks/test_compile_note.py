"""The end-of-attempt compile note names only the ranks that compiled MORE graphs than the usual count
(launcher/run/stacks/job_stacks.py): nanoGPT's rank 0 compiles its master-only evaluation too, so on 2 ranks it is
rank 0 that is named, never rank 1 for compiling fewer; equal counts, or one rank, say nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.contract.names import COMPILE_STATE_FILE
from launcher.run.stacks.job_stacks import JobStacks


def _note(tmp_path: Path, graphs: dict[int, int]) -> str | None:
    stacks = JobStacks(tmp_path, None)
    for rank, count in graphs.items():
        (stacks.folder / COMPILE_STATE_FILE.format(rank=rank)).write_text(json.dumps({"state": "idle",
                                                                                      "graphs": count}))
    return stacks.compile_note(graphs)


@pytest.mark.parametrize(("graphs", "named"), [
    ({0: 2, 1: 1}, "rank 0 compiled 2 graph(s), the other ranks 1 each"),
    ({0: 1, 1: 2}, "rank 1 compiled 2 graph(s), the other ranks 1 each"),
    ({0: 3, 1: 3, 2: 5, 3: 3}, "rank 2 compiled 5 graph(s), the other ranks 3 each"),
    ({0: 2, 1: 2, 2: 1}, None),
    ({0: 3, 1: 2, 2: 2, 3: 1}, "rank 0 compiled 3 graph(s), the other ranks 1 to 2"),
    ({0: 2, 1: 2}, None),
    ({0: 4}, None),
])
def test_only_a_rank_that_compiled_more_than_the_usual_count_is_named(tmp_path: Path, graphs: dict[int, int],
                                                                      named: str | None) -> None:
    note = _note(tmp_path, graphs)
    if named is None:
        assert note is None
    else:
        assert note is not None and note.startswith(named), note
