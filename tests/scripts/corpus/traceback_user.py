"""A script that fails: its traceback must start at its own first frame, as under python."""


def inner():
    raise ValueError("the user's own error")


def outer():
    inner()


print("out: before", flush=True)
outer()
