"""What dynamo lists, before and after a compile; then torch.export and dynamo's reset between compiles."""
import torch
import torch._dynamo

print("out:", "inductor" in torch._dynamo.list_backends(), "eager" in torch.compiler.list_backends(exclude_tags=()),
      flush=True)


class Net(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=0)


exported = torch.export.export(Net(), (torch.ones(2, 3),))
print("out:", exported.module()(torch.ones(2, 3)).tolist(), flush=True)
print("out:", torch.compile(Net())(torch.ones(2, 3)).tolist(), flush=True)
torch._dynamo.reset()
print("out:", torch.compile(Net(), backend="eager")(torch.ones(4, 1)).tolist(), flush=True)
