"""A 4-rank gloo job whose ranks pretend to live on two hosts; one rank misbehaves.

Used by the corpus generator's culprit scenarios: --fail stall (the culprit sleeps before a
collective, the others time out in it), sigkill (the culprit is killed by SIGKILL), exit (the
culprit leaves the job early with a non-zero code and no exception). No DeepSpeed import: the
DeepSpeed launcher or a bash wrapper starts it.
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fail", choices=["stall", "sigkill", "exit"], required=True)
    p.add_argument("--culprit", type=int, default=2)
    p.add_argument("--timeout", type=int, default=4)
    p.add_argument("--stall", type=int, default=30)
    p.add_argument("--local_rank", type=int, default=-1)  # passed by the deepspeed launcher
    a = p.parse_args()
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    grad = torch.ones(1024)
    for step in range(1, 5):
        if rank == a.culprit and step == 3:
            if a.fail == "stall":
                time.sleep(a.stall)  # a hung data loader: never reaches the allreduce
            elif a.fail == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                print(f"rank {rank}: no more batches in my shard, leaving", flush=True)
                sys.exit(3)
        dist.all_reduce(grad)
        print(f"step {step} rank {rank}/{world} grad_norm {grad.norm().item():.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
