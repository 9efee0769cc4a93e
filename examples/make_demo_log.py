"""Write the bundled demo log: a 2-node x 8-GPU ZeRO-3 job where rank 3 runs out of GPU memory
and the other 15 ranks then hit the NCCL watchdog timeout. Deterministic; rerun to refresh."""

import random
import sys

rng = random.Random(7)
HOSTS = ("gpu-node-01", "gpu-node-02")
out = []


def host_of(rank):
    return HOSTS[rank // 8]


def ts(sec):
    m, s = divmod(sec, 60)
    m = int(m)
    return f"2024-10-02 14:{m:02d}:{s:06.3f}".replace(".", ",")


out.append(f"[{ts(0.1)}] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w gpu-node-01,gpu-node-02 "
           "export NCCL_DEBUG=INFO; cd /workspace; python -u -m deepspeed.launcher.launch "
           "--world_info=eyJncHUtbm9kZS0wMSI6IFswLCAxLCAyLCAzLCA0LCA1LCA2LCA3XX0= --node_rank=%n "
           "--master_addr=10.20.0.11 --master_port=29500 train.py --deepspeed ds_zero3.json")
for rank in range(16):
    h = host_of(rank)
    out.append(f"{h}: [{ts(3 + rank * 0.01)}] [INFO] [comm.py:637:init_distributed] cdb=None")
for rank in range(16):
    h, pid, local = host_of(rank), 51200 + rank, rank % 8
    for msg in ("Bootstrap : Using ens5:10.20.0.%d<0>" % (11 + rank // 8),
                "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ens5:10.20.0.%d<0>" % (11 + rank // 8),
                "Using network IB",
                "Channel 00/08 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15",
                f"comm 0x{rng.getrandbits(40):x} rank {rank} nranks 16 cudaDev {local} busId {local + 1}0000 - Init COMPLETE"):
        out.append(f"{h}: {h}:{pid}:{pid + 90} [{local}] NCCL INFO {msg}")
for step in range(1, 41):
    out.append(f"{HOSTS[0]}: [{ts(20 + step * 2.5)}] [INFO] [logging.py:96:log_dist] [Rank 0] "
               f"step={step * 10}, skipped=0, lr=[{2e-5:.1e}], mom=[(0.9, 0.95)]")
    out.append(f"{HOSTS[0]}: {{'loss': {2.9 - step * 0.03:.4f}, 'learning_rate': 2e-05, 'epoch': {step / 400:.2f}}}")
# Rank 3 dies first.
oom = [
    "Traceback (most recent call last):",
    '  File "/workspace/train.py", line 301, in <module>',
    "    main()",
    '  File "/workspace/train.py", line 274, in main',
    "    model_engine.backward(loss)",
    '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/zero/stage3.py", line 2213, in backward',
    "    self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 3 has a total capacity of "
    "79.15 GiB of which 1.07 GiB is free. Including non-PyTorch memory, this process has 78.07 GiB memory in use. "
    "Of the allocated memory 71.30 GiB is allocated by PyTorch, and 5.12 GiB is reserved by PyTorch but unallocated. "
    "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
    "avoid fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
]
for line in oom:
    out.append(f"{HOSTS[0]}: [rank3]: {line}")
for rank in [r for r in range(16) if r != 3]:
    h = host_of(rank)
    stamp = f"E1002 14:31:{10 + rank % 7:02d}.{rng.randrange(10**9):09d}"
    out.append(f"{h}: [rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=4123, OpType=_ALLGATHER_BASE, NumelIn=2621440, "
               "NumelOut=41943040, Timeout(ms)=1800000) ran for 1800083 milliseconds before timing out.")
    out.append(f"{h}: [rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:1537] [PG 0 (default_pg) Rank {rank}] "
               "Timeout at NCCL work: 4123, last enqueued NCCL work: 4123, last completed NCCL work: 4122.")
out.append(f"{HOSTS[0]}: [{ts(1900)}] [INFO] [launch.py:316:sigkill_handler] Killing subprocess 51203")
out.append(f"{HOSTS[0]}: [{ts(1900.2)}] [ERROR] [launch.py:322:sigkill_handler] ['/usr/bin/python', '-u', "
           "'train.py', '--local_rank=3', '--deepspeed', 'ds_zero3.json'] exits with return code = 1")
out.append("pdsh@gpu-node-01: gpu-node-01: ssh exited with exit code 1")
sys.stdout.write("\n".join(out) + "\n")
