"""Small CUDA training job for the GPU scenarios (one H200 was what we had).

Started by torchrun, the `deepspeed` launcher or `accelerate launch`; --fail picks the
failure to provoke.  Sizes are chosen for a ~140 GB card: each OOM asks for more than that.
"""
import argparse
import datetime
import os

import torch


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    p.add_argument("--fail", default="none")
    p.add_argument("--config", default="")
    p.add_argument("--steps", type=int, default=3)
    return p.parse_args()


def plain(a):
    """torch only: NCCL process group, a few all-reduces, then the chosen failure."""
    torch.cuda.set_device(0 if a.fail == "dup_gpu" else a.local_rank)
    torch.distributed.init_process_group("nccl", timeout=datetime.timedelta(seconds=30))
    t = torch.ones(4, device="cuda")
    torch.distributed.all_reduce(t)
    print(f"rank {torch.distributed.get_rank()} all_reduce ok: {t.tolist()}", flush=True)
    if a.fail == "oom_alloc":
        # a KV cache sized from a wrong sequence length
        cache = torch.empty(160 * 2**30 // 2, dtype=torch.bfloat16, device="cuda")
        print(cache.shape)
    if a.fail == "device_assert":
        emb = torch.nn.Embedding(1000, 64).cuda()
        ids = torch.randint(0, 1200, (8, 128), device="cuda")  # vocab smaller than the tokenizer's
        print(emb(ids).sum().item())
    torch.distributed.destroy_process_group()


def with_deepspeed(a):
    """A DeepSpeed engine around a stack of Linear layers, then the chosen failure."""
    import deepspeed
    deepspeed.init_distributed(dist_backend="nccl", timeout=datetime.timedelta(seconds=60))
    h = {"oom_optimizer": 98304, "oom_forward": 8192}.get(a.fail, 1024)
    layers = 1 if a.fail == "oom_optimizer" else 4
    model = torch.nn.Sequential(*[torch.nn.Linear(h, h, bias=False, device="cuda") for _ in range(layers)])
    opt = None
    if a.fail in ("oom_optimizer", "fp16_collapse", "fp16_recover", "none"):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt,
                                           model_parameters=None if opt else model.parameters(),
                                           config=a.config)
    dtype = torch.half if engine.fp16_enabled() else (torch.bfloat16 if engine.bfloat16_enabled() else torch.float)
    bs = 1_900_000 if a.fail == "oom_forward" else engine.train_micro_batch_size_per_gpu()
    for step in range(a.steps):
        x = torch.randn(bs, h, device=engine.device, dtype=dtype)
        loss = engine(x).float().pow(2).mean()
        if a.fail == "fp16_collapse":
            loss = loss * 1e30  # a diverged loss: every step overflows
        if a.fail == "fp16_recover" and step < 6:
            loss = loss * 1e12  # early spikes that the scaler absorbs
        engine.backward(loss)
        engine.step()
        print(f"step {step} loss {loss.item():.4f} scale {engine.optimizer.cur_scale if engine.fp16_enabled() else 1}",
              flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    args = parse()
    if args.config:
        with_deepspeed(args)
    else:
        plain(args)
