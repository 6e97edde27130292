"""A DataLoader whose forked workers call a compiled function, and a parent that compiles too."""
import torch
from torch.utils.data import DataLoader, Dataset

double = torch.compile(lambda t: t * 2)


class Doubled(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return double(torch.full((2,), float(index)))


if __name__ == "__main__":
    loader = DataLoader(Doubled(), batch_size=2, num_workers=2, multiprocessing_context="fork")
    print("out:", [batch.sum().item() for batch in loader], flush=True)
    print("out:", double(torch.ones(1)).item(), flush=True)
