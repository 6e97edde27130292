"""A node launcher's place in the job: which node it is (identity: the node table, Slurm, OpenMPI) and its
address (addresses). `python -m launcher.multinode.node`; its command line watches the head's ssh (cli/command.py)."""
