"""Deterministic healthy multi-rank log lines: the noise real job logs bury a failure in."""

import random


def healthy_lines(count, ranks=16, seed=0):
    """Yield `count` healthy lines: NCCL INFO from many ranks, DeepSpeed steps, progress bars."""
    rng = random.Random(seed)
    for i in range(count):
        rank = rng.randrange(ranks)
        host = f"node{rank // 8:02d}"
        kind = i % 10
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
        elif kind == 8:
            yield (f"[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   "
                   f"{rng.choice(['fp16_enabled', 'bfloat16_enabled', 'train_batch_size', 'zero_enabled'])} "
                   f"........ {rng.choice(['True', 'False', '32'])}")
        else:
            yield f"{{'loss': {2.5 - i / 1e5:.4f}, 'grad_norm': 0.41, 'learning_rate': 2e-05, 'epoch': 0.{i % 100:02d}}}"
