"""The accelerator API in microseconds, printed as JSON: first set_compile_backend, cached set, get."""

import json
import time
import timeit

from accelerators.cpu import CPUAccelerator

start = time.perf_counter()
first = CPUAccelerator()
first.set_compile_backend("inductor")
first_in_process = time.perf_counter() - start  # includes importing torch._dynamo
fresh = timeit.repeat("CPUAccelerator().set_compile_backend('inductor')", globals=globals(), number=1, repeat=20)
acc = CPUAccelerator()
acc.set_compile_backend("inductor")
cached = min(timeit.repeat("acc.set_compile_backend('inductor')", globals=globals(), number=10_000, repeat=5)) / 10_000
getter = min(timeit.repeat("acc.get_compile_backend()", globals=globals(), number=100_000, repeat=5)) / 100_000
print(json.dumps({
    "set, first call in the process (imports torch._dynamo)": first_in_process * 1e6,
    "set, first call on a new object (walks the registry)": min(fresh) * 1e6,
    "set, cached call": cached * 1e6,
    "get_compile_backend": getter * 1e6,
}))
