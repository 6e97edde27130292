"""A compile backend module that raises on import: the launcher finds it, every rank refuses it."""

raise RuntimeError("faults_broken_backend is broken on purpose")


def backend(graph_module, example_inputs):
    return graph_module
