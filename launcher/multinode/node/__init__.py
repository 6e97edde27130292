"""A node launcher's place in the job: which node it is (identity: the node table, Slurm, OpenMPI),
its address (addresses), and watching the head's ssh (stdin_watch). `python -m launcher.multinode.node`."""
