"""docs/ARCHITECTURE.md, "Rules the code keeps": nothing of ours that imports or waits runs inside another
module's import. Every hook a rank leaves for the user's imports (torch, dynamo's registry, torch.distributed,
DeepSpeed, transformers) is watched while a script imports them, torch's compiler config first. The hooks are the
rank's own, alike on both paths: the direct path, where rank 0 also hosts the store, has them all."""

from __future__ import annotations

import pytest

from tests.launches import SCRIPTS, Launcher

# Every hook's own work is a value set: far below what any import or wait would take.
MOST_SECONDS = 0.25
EXPECTED_HOOKS = {"torch", "torch._dynamo", "torch._dynamo.backends.registry", "deepspeed.compile.config",
                  "deepspeed.accelerator.real_accelerator", "deepspeed.runtime.engine",
                  "transformers.training_args"}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_no_hook_of_ours_imports_or_waits_inside_the_users_import(launch: Launcher) -> None:
    result = launch(["--nproc-per-node", "2", "--compile-backend", "aot_eager", str(SCRIPTS / "hooks_audit.py")],
                    timeout=280)
    assert result.returncode == 0, result.stderr[-3000:]
    records = result.records()
    assert set(records) == {0, 1}
    for rank, ran in records.items():
        hooks = {entry["hook"] for entry in ran}
        expected = EXPECTED_HOOKS | ({"torch.distributed"} if rank == 0 else set())  # hosts the store
        assert expected <= hooks, (rank, hooks)
        for entry in ran:
            assert entry["imported"] == [], entry
            assert entry["seconds"] < MOST_SECONDS, entry
