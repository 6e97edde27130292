"""The user's own backend, in a module beside the script."""
import os


def my_backend(graph_module, example_inputs):
    os.write(1, b"backend: mybk compiled\n")
    return graph_module.forward
