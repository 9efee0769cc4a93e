"""Deterministic healthy multi-rank log lines: the noise real job logs bury a failure in.

Besides the bulk (NCCL INFO, DeepSpeed step lines, progress bars) it mixes in the healthy
lines that look most like failures: ds_report's warnings, NCCL's plugin `dlerror`, c10d's
start-up connect retries, OVERFLOW at high loss scales, DeepSpeed's accepted CUDA mismatch.
"""

import random

# Healthy lines that contain failure-like words; each was printed by a job that went on fine.
TRICKY = (
    " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
    " [WARNING]  async_io: please install the libaio-dev package with apt",
    " [WARNING]  If libaio is already installed (perhaps from source), try setting the CFLAGS and "
    "LDFLAGS environment variables to where it can be found.",
    " [WARNING]  Please specify the CUTLASS repo directory as environment variable $CUTLASS_PATH",
    " [WARNING]  sparse_attn requires a torch version >= 1.5 and < 2.0 but detected 2.1",
    " [WARNING]  using untested triton version (2.1.0), only 1.0.0 is known to be compatible",
    "async_io ............... [NO] ....... [NO]",
    "fused_adam ............. [NO] ....... [OKAY]",
    "torch cuda version ............... 12.1",
    "nvcc version ..................... 12.1",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object "
    "file: No such file or directory No plugin found (libnccl-net.so), using internal implementation",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO NET/IB : No device found.",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO Call to connect returned Connection refused, retrying",
    "{host}:{pid}:{pid} [{dev}] NCCL INFO cudaDriverVersion 12020",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 "
    "(errno: 99 - Cannot assign requested address).",
    "[2024-10-02 14:00:01,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "[2024-10-02 14:00:01,000] [WARNING] [stage3.py:1850:step] 4 pytorch allocator cache flushes since "
    "last step. this happens when there is high memory pressure and is detrimental to performance.",
    "Installed CUDA version 12.2 does not match the version torch was compiled with 12.1 but since the "
    "APIs are compatible, accepting this combination",
    "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
    "Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...",
    "Building extension module fused_adam...",
    "Allowing ninja to set a default number of workers... (overridable by setting the environment "
    "variable MAX_JOBS=N)",
    "ninja: no work to do.",
    "Loading extension module fused_adam...",
    "Time to load fused_adam op: 0.41 seconds",
    "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: "
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
    "[rank{rank}]:[W Utils.hpp:164] Warning: Environment variable NCCL_BLOCKING_WAIT is deprecated; "
    "use TORCH_NCCL_BLOCKING_WAIT instead (function getCvarBool)",
    "[Gloo] Rank {rank} is connected to 15 peer ranks. Expected number of connected peer ranks is : 15",
    "[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   fp16_enabled ................. False",
    "[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   bfloat16_enabled ............. True",
    "[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   train_batch_size ............. 64",
    "Token indices sequence length is longer than the specified maximum sequence length for this model "
    "(4121 > 4096). Running this sequence through the model will result in indexing errors",
    "wandb: Tracking run with wandb version 0.16.3",
    "/opt/conda/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load "
    "image Python extension: '/opt/conda/lib/python3.10/site-packages/torchvision/image.so: undefined "
    "symbol: _ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality from "
    "`torchvision.io`, you can ignore this warning.",
)


def healthy_lines(count, ranks=16, seed=0, tricky=True):
    """Yield `count` healthy lines: NCCL INFO from many ranks, DeepSpeed steps, progress bars.

    With `tricky`, one line in six is one of TRICKY (far denser than real logs hold them).
    """
    rng = random.Random(seed)
    for i in range(count):
        rank = rng.randrange(ranks)
        host = f"node{rank // 8:02d}"
        kind = i % 12
        if kind < 5:
            yield (f"{host}:{4100 + rank}:{4200 + rank} [{rank % 8}] NCCL INFO Channel {i % 32:02d}/32 : "
                   f"{rank} {(rank + 1) % ranks} via P2P/IPC/read")
        elif kind == 5:
            yield (f"[2024-10-02 14:{(i // 600) % 60:02d}:{(i // 10) % 60:02d},{i % 1000:03d}] [INFO] "
                   f"[logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, lr=[2e-05], mom=[(0.9, 0.95)]")
        elif kind == 6:
            pct = i % 100
            yield f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {pct}/100 [00:{pct % 60:02d}<00:30,  1.66it/s]"
        elif kind == 7:
            yield f"[rank{rank}]:[W socket.cpp:464] [c10d] The server socket has started listening on [::]:29500."
        elif kind in (8, 9) and tricky:
            yield rng.choice(TRICKY).format(host=host, pid=4100 + rank, dev=rank % 8, rank=rank)
        elif kind == 10:
            yield (f"[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   "
                   f"{rng.choice(['zero_enabled', 'gradient_clipping', 'steps_per_print'])} ........ "
                   f"{rng.choice(['True', 'False', '1.0'])}")
        else:
            yield f"{{'loss': {2.5 - i / 1e5:.4f}, 'grad_norm': 0.41, 'learning_rate': 2e-05, 'epoch': 0.{i % 100:02d}}}"


def diagnose_behind_noise(tmp_path, lines, noise=0):
    """Diagnose `lines` written to a log behind `noise` healthy lines (the prefilter's path when many)."""
    from classifier.diagnosis.diagnose import diagnose_job
    path = tmp_path / "job.log"
    path.write_text("\n".join(list(healthy_lines(noise)) + lines) + "\n")
    return diagnose_job([str(path)])
