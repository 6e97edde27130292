"""Multi-node launches: the head (`head/`) starts one node launcher per node; a node (`node/`) finds its place."""
