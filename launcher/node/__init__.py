"""The job placed on this node, once (`plan_node`, node_plan: this node's NodePlan): which node it is (identity:
the node table, Slurm, OpenMPI), its address (addresses), its accelerator and the backend's check (node_check),
its rendezvous and launch path (rendezvous_choice, path_choice), and its part of every rank's environment
(node_env). `python -m launcher.node` is a hostfile launch's node launcher; its command line watches the head's
ssh (cli/command.py)."""
