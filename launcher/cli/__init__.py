"""The command line: the console scripts `accel-launch` (with its subcommand `report`) and `accel-report`,
and the node launcher's entry. `start` is their first code; it imports nothing of click or torch, so this
package re-exports nothing (importing `launcher.cli` must stay that cheap)."""
