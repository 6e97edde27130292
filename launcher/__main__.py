"""`python -m launcher` runs accel-launch (how a node launcher is started on remote nodes)."""

from launcher.cli.command import main

main()
