"""Load (JIT-build) one DeepSpeed op, as a training job does on first use."""
import argparse
import sys

p = argparse.ArgumentParser()
p.add_argument("--op", required=True)
p.add_argument("--local_rank", type=int, default=-1)
a = p.parse_args()

import deepspeed
from deepspeed.accelerator import get_accelerator

if a.op == "cpu_adam":
    from deepspeed.ops.adam import DeepSpeedCPUAdam
    import torch
    m = torch.nn.Linear(8, 8)
    opt = DeepSpeedCPUAdam(m.parameters(), lr=1e-3)
    print("cpu_adam loaded", flush=True)
elif a.op == "async_io":
    from deepspeed.ops.op_builder import AsyncIOBuilder
    AsyncIOBuilder().load()
    print("async_io loaded", flush=True)
else:
    builder = get_accelerator().create_op_builder(a.op)
    if builder is None:
        raise RuntimeError(f"accelerator {get_accelerator().device_name()} has no op builder {a.op}")
    builder.load()
    print(a.op, "loaded", flush=True)
