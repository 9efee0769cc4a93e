"""Tiny DeepSpeed training job used by the corpus generator (torch.nn.Linear(8, 8)).

Launched by the `deepspeed` launcher (passes --local_rank) or by torchrun (LOCAL_RANK env).
--fail selects an injected failure; --record wraps main() with torchelastic's @record.
"""
import argparse
import datetime
import json
import os
import signal
import sys
import time

import torch
import deepspeed


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
    p.add_argument("--config", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--fail", default="none",
                   choices=["none", "json_load", "user_exc", "sigkill", "stall", "save_ckpt", "init_only"])
    p.add_argument("--ckpt-dir", default="ckpt")
    p.add_argument("--record", action="store_true")
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--hidden", type=int, default=8)
    return p.parse_args()


def main(a):
    config = a.config
    if a.fail == "json_load":
        # The training script itself reads the config with the strict json module.
        with open(a.config) as f:
            config = json.load(f)
    deepspeed.init_distributed(dist_backend="gloo", timeout=datetime.timedelta(seconds=a.timeout))
    if a.fail == "init_only":
        print("init_distributed ok rank", torch.distributed.get_rank(), flush=True)
        return
    torch.manual_seed(0)
    model = torch.nn.Linear(a.hidden, a.hidden)
    engine, _, _, sched = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    rank = engine.global_rank
    for step in range(a.steps):
        x = torch.randn(engine.train_micro_batch_size_per_gpu(), a.hidden)
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        if step == 0 and a.fail == "user_exc" and rank == 1:
            raise ValueError(f"expected input of shape [4, {a.hidden}] but batch {step} has shape [4, {a.hidden - 1}]")
        if step == 0 and a.fail == "sigkill":
            if rank == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(3)  # the surviving rank is busy computing when its peer dies
        if step == 0 and a.fail == "stall" and rank == 1:
            time.sleep(a.timeout * 3)
        # average the loss over the world group for logging (this collective carries the
        # init_distributed timeout; DeepSpeed's own data-parallel group does not)
        avg = loss.detach().clone()
        deepspeed.comm.all_reduce(avg)
        avg /= engine.world_size
        print(f"rank {rank} step {step} loss {avg.item():.4f} lr {engine.get_lr()}", flush=True)
    if a.fail == "save_ckpt":
        engine.save_checkpoint(a.ckpt_dir, tag="step3")
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    args = parse()
    if args.record:
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main(args)
