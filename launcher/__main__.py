"""`python -m launcher` runs accel-launch, as the console script does."""

from launcher.cli.start import main

main()
