"""One rank of a real 3-rank gloo job with the flight recorder on (tests/diagnosis/test_flightrec.py).

Rank 2 is late for the second allreduce. Each rank dumps its flight recorder the way
ProcessGroupNCCL's watchdog does on every rank at a timeout — torch 2.13 writes no dump for gloo
on its own, so the dump is taken here with the same call (`_dump_fr_trace`) into
`$TORCH_FR_DUMP_TEMP_FILE<rank>`: rank 2 when the others' timeout has passed, before it enters.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def dump(rank):
    with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank), "wb") as fh:
        fh.write(torch._C._distributed_c10d._dump_fr_trace())


def main():
    rank = int(sys.argv[1])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[2]}", rank=rank,
                            world_size=3, timeout=datetime.timedelta(seconds=2))
    grad = torch.ones(8)
    dist.all_reduce(grad)
    print(f"step 1 rank {rank}", flush=True)
    if rank == 2:
        time.sleep(4)  # past the others' timeout: they have dumped and left
        dump(rank)
    try:
        dist.all_reduce(grad)
    except RuntimeError as exc:
        print(f"RuntimeError: {exc}", flush=True)
        if rank != 2:
            dump(rank)
        os._exit(1)


if __name__ == "__main__":
    main()
