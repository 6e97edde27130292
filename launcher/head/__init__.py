"""The head of a hostfile launch: the hostfile and its selection, the runners (one class each, runners.py) that
start one node launcher per node with the job as data (commands), and their supervision."""
