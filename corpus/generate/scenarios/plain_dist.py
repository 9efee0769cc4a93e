"""Plain torch.distributed (gloo) job used by the corpus generator; no DeepSpeed.

--fail selects an injected failure; --record wraps main() with torchelastic's @record.
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fail", default="none",
                   choices=["none", "user_exc", "sigkill", "stall", "stall_barrier", "alloc", "cuda", "save", "write",
                            "write_one", "shape"])
    p.add_argument("--out", default="out")
    p.add_argument("--record", action="store_true")
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--no-init", action="store_true")
    # passed by the deepspeed launcher (--local_rank) and by torch.distributed.launch (--local-rank)
    p.add_argument("--local_rank", "--local-rank", type=int, default=-1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warn", action="store_true", help="call torch APIs that warn, as real scripts do")
    return p.parse_args()


def warn_like_real_scripts(model):
    """Warnings a healthy CPU job commonly prints (deprecated AMP API, tensor copy-construct)."""
    scaler = torch.cuda.amp.GradScaler()  # deprecated alias; disabled without CUDA
    torch.tensor(next(model.parameters()))  # copy-construct warning
    torch.optim.lr_scheduler.StepLR(torch.optim.SGD(model.parameters(), lr=0.1), 1).step()  # step order
    return scaler


def main(a):
    if a.fail == "cuda":
        # A CPU-only torch build asked for CUDA before any process group exists.
        x = torch.zeros(1).cuda()
    if not a.no_init:
        dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=a.timeout))
    rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", 0))
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if a.warn:
        warn_like_real_scripts(model)
    for step in range(a.steps):
        width = 7 if a.fail == "shape" and rank == 1 and step == 1 else 8
        loss = model(torch.randn(4, width)).pow(2).mean()
        loss.backward()
        if dist.is_initialized():
            for p in model.parameters():
                dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if a.fail == "user_exc" and rank == 1:
            raise KeyError("label_ids")
        if a.fail == "sigkill" and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if a.fail in ("stall", "stall_barrier") and rank == 1:
            time.sleep(a.timeout * 3)
        if a.fail == "stall_barrier":
            # a sanity barrier that names the ranks that did not arrive
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=a.timeout))
    if a.fail == "alloc" and rank == 1:
        # 64 GiB on a box whose address space is capped by `ulimit -v`.
        big = torch.empty(64 * 1024 ** 3 // 4, dtype=torch.float32)
        big.fill_(1.0)
    if a.fail == "save":
        os.makedirs(a.out, exist_ok=True)
        torch.save({"w": torch.randn(1024, 1024), "rank": rank}, os.path.join(a.out, f"model_rank{rank}.pt"))
    if a.fail == "write" or (a.fail == "write_one" and rank == 1):
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"metrics_rank{rank}.bin"), "wb") as f:
            f.write(os.urandom(4 * 1024 * 1024))
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    args = parse()
    if args.record:
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main(args)
