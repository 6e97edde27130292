"""This node's ranks on torch elastic (`run_job`, spawn): each rank's command and environment
(rank_process), the rendezvous (rendezvous/), output, grace, restarts, teardown, and the first failure
(failure/)."""
