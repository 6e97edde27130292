"""accel-launch in a torch that lacks one of the engine path's private names (tests/run/engine/test_engine_seams.py):
argv[1] names the seam (launcher.run.engine.engine_seams.SEAMS), the rest are accel-launch's arguments. The seam's
name is given a suffix in the table, as a torch that renamed it would look to the launcher, while torch itself stays
whole; then the launcher runs as the console script does."""

from __future__ import annotations

import sys
from dataclasses import replace

from launcher.run.engine import engine_seams

seam_name = sys.argv[1]
engine_seams.SEAMS[seam_name] = replace(engine_seams.SEAMS[seam_name],
                                        attribute=engine_seams.SEAMS[seam_name].attribute + "_renamed")
sys.argv = ["accel-launch", *sys.argv[2:]]

from launcher.cli.start import main  # noqa: E402

main()
