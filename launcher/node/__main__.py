"""`python -m launcher.node`: the node launcher that the head of a hostfile launch starts."""

from launcher.cli.start import node_main

node_main()
