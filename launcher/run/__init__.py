"""This node's ranks, as its plan says, driven by the launcher's own loop (direct_run, torch-free) or by torch
elastic's agent (engine/); either way one rank group (group/) within the job's scope (scope/), with the first
failure (failure/), every rank's stack (stacks/) and the watch over the ranks as they run (watch/)."""
