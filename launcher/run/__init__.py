"""This node's ranks (`run_job`, spawn): each rank's command and environment (rank_start), one rank group for both
paths (rank_group: output, exits, the shutdown window, the first failure) driven by the direct path (direct/) or
torch elastic's agent (rank_agent), the rendezvous (rendezvous/), restarts, teardown, the first failure
(failure/) and every rank's stack (stacks/)."""
