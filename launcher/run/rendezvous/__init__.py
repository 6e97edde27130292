"""Which rendezvous the engine uses (choice): a lone node's own store (one_node), or for several nodes
torch's c10d or static placed on this node (placed_handler) with a roll call of who came (roll_call), and
the check that every node resolved one compile backend (backend_agreement). Only choice is torch-free."""
