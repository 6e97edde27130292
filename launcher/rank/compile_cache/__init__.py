"""Compile once per job (docs/CONTRACT.md section 7): a graph inductor compiled in one rank is loaded, not compiled
again, by every other rank of the job that needs it, on every node. `install.py` hooks torch in a rank; the
rest is what the hooks use: the node's lock and copy (`node_share.py`), the job's signed copy in the job's store
(`job_share.py`) and the calls that reach it (`store_calls.py`), the C++ kernels that travel with a graph (`kernels.py`), and the cache torch calls
(`graph_cache.py`).
"""
