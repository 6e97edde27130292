"""Hugging Face's Trainer with torch_compile=True on a tiny model built from a config (no download). argv[1]:
the torch_compile_backend to set, or "unset"; prints the backend dynamo really compiled with."""
import sys
import tempfile

import torch
from torch._dynamo.utils import counters
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return {"input_ids": torch.tensor([1, 2 + index % 5, 3, 0]), "labels": torch.tensor(index % 2)}


def main() -> None:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8, max_position_embeddings=8, num_labels=2)
    backend = None if sys.argv[1] == "unset" else sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        arguments = TrainingArguments(output_dir=out, max_steps=2, per_device_train_batch_size=4, use_cpu=True,
                                      torch_compile=True, torch_compile_backend=backend, report_to=[],
                                      save_strategy="no", logging_strategy="no", disable_tqdm=True)
        print("out: arguments say", arguments.torch_compile_backend, flush=True)
        Trainer(model=BertForSequenceClassification(config), args=arguments, train_dataset=Pairs()).train()
    used = "inductor" if counters["inductor"] else "aot_eager" if counters["aot_autograd"] else "eager"
    print("compiled with:", used, flush=True)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
