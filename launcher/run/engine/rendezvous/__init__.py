"""Which rendezvous the engine uses (choice): a lone node's own store (one_node), or for several nodes torch's c10d
or static placed on this node with the check that every node resolved one compile backend (backend_agreement),
and a roll call of who came (roll_call). Only choice is torch-free."""
