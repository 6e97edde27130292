"""torch's compiler modules imported first, in the order given on the command line, then a default compile."""
import importlib
import sys

for name in sys.argv[1].split(","):
    importlib.import_module(name)

import torch  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

torch.manual_seed(0)
x = torch.randn(4)
print("out:", torch.allclose(torch.compile(lambda t: t.cos() + t)(x), x.cos() + x), flush=True)
used = "inductor" if counters["inductor"] else "aot_eager" if counters["aot_autograd"] else "eager"
print("compiled with:", used, flush=True)
