"""Hugging Face side of the GPU scenarios: Trainer and accelerate around DeepSpeed.

The model is a small GPT-2 built from its config (nothing is downloaded).
"""
import argparse

import torch


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=256))


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 1000, (128,))
        return {"input_ids": ids, "labels": ids}


def trainer(a):
    """Trainer with a DeepSpeed config whose batch fields contradict the arguments."""
    from transformers import Trainer, TrainingArguments
    args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, gradient_accumulation_steps=1,
                             max_steps=3, bf16=True, deepspeed=a.config, report_to=[], logging_steps=1)
    Trainer(model=tiny_gpt2(), args=args, train_dataset=Tokens()).train()


def accelerate_oom(a):
    """accelerate + DeepSpeed ZeRO-2: a batch far too large for the card."""
    from accelerate import Accelerator
    acc = Accelerator()
    model = tiny_gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=4)
    model, opt, loader = acc.prepare(model, opt, loader)
    for step, batch in enumerate(loader):
        # sequence packing gone wrong: the batch is repeated into one enormous sequence group
        ids = batch["input_ids"].repeat(131072, 1)
        out = model(input_ids=ids, labels=ids)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        acc.print(f"step {step} loss {out.loss.item():.3f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["trainer", "accelerate_oom"])
    p.add_argument("--config", default="")
    p.add_argument("--out", default="/tmp/hf-out")
    p.add_argument("--local_rank", type=int, default=0)
    a = p.parse_args()
    trainer(a) if a.mode == "trainer" else accelerate_oom(a)
