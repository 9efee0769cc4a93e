"""Gigabyte logs: dsdiag against GNU grep on the rules' own patterns, with peak memory.

    python benchmarks/scale.py [--sizes 100,1000] [--dir /tmp/dsdiag-bench] [--dsdiag CMD]

For each size (MB) it writes (once, cached) a deterministic job log — 256 ranks, NCCL INFO
at scale, DeepSpeed step lines, tqdm `\\r` rewrites, config dumps, the failure near the end
(a CUDA OOM on one rank) and its echoes after it — then times, under `/usr/bin/time -v`:
`grep -ciE -f patterns` (patterns from `dsdiag rules export --grep`) and `dsdiag --format
json`. It prints seconds, peak RSS and the ratios the targets are stated in.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANKS = 256


def _noise_block(rng, step):
    """About 1,000 healthy lines of one training phase."""
    out = []
    for _ in range(120):
        r = rng.randrange(RANKS)
        host = f"node{r // 8:03d}"
        out.append(f"{host}:{40000 + r}:{40100 + r} [{r % 8}] NCCL INFO Channel {rng.randrange(32):02d}/32 : "
                   f"{r}[{r % 8}] -> {(r + 1) % RANKS}[{(r + 1) % 8}] via P2P/IPC/read")
        out.append(f"{host}:{40000 + r}:{40100 + r} [{r % 8}] NCCL INFO Connected all rings")
        out.append(f"{host}:{40000 + r}:{40100 + r} [{r % 8}] NCCL INFO {rng.choice(['NVLS', 'CollNet', 'Tree'])} "
                   f"comm 0x{rng.getrandbits(40):x} rank {r} nRanks {RANKS} nNodes {RANKS // 8} - Init COMPLETE")
        out.append(f"[2024-10-02 14:{(step // 60) % 60:02d}:{step % 60:02d},{rng.randrange(1000):03d}] [INFO] "
                   f"[logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[1.9e-05], mom=[(0.9, 0.95)]")
        out.append(f"{{'loss': {rng.uniform(1, 3):.4f}, 'grad_norm': {rng.uniform(0.1, 1):.4f}, "
                   f"'learning_rate': 1.9e-05, 'epoch': {step / 1e4:.2f}}}")
        pct = step % 100
        out.append("".join(f"\r{p:3d}%|{'█' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<00:30, 1.66it/s]"
                           for p in range(pct, min(pct + 5, 100))))
        out.append(f"[2024-10-02 14:00:00,000] [INFO] [config.py:1000:print]   "
                   f"{rng.choice(['zero_enabled', 'fp16_enabled', 'bfloat16_enabled', 'steps_per_print'])} "
                   f"........ {rng.choice(['True', 'False', '10'])}")
        out.append(f"[rank{r}]:[W socket.cpp:464] [c10d] The server socket has started listening on [::]:29500.")
    return "\n".join(out) + "\n"


FAILURE = [
    "[rank37]: Traceback (most recent call last):",
    '[rank37]:   File "/workspace/train.py", line 274, in main',
    "[rank37]:     model_engine.backward(loss)",
    "[rank37]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.82 GiB. GPU 5 has a total "
    "capacity of 79.15 GiB of which 1.07 GiB is free. Of the allocated memory 71.30 GiB is allocated by "
    "PyTorch, and 5.12 GiB is reserved by PyTorch but unallocated.",
]


def write_log(path, megabytes):
    """Write the deterministic job log of about `megabytes` MB."""
    rng = random.Random(megabytes)
    target = megabytes * 1_000_000
    written, step = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target - 200_000:
            block = _noise_block(rng, step)
            f.write(block)
            written += len(block.encode())
            step += 1
        f.write("\n".join(FAILURE) + "\n")
        for r in range(RANKS):
            if r != 37:
                f.write(f"[rank{r}]:[E1002 14:31:10.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
                        "caught collective operation timeout: WorkNCCL(SeqNum=4123, OpType=_ALLGATHER_BASE, "
                        "NumelIn=2621440, NumelOut=41943040, Timeout(ms)=1800000) ran for 1800083 milliseconds "
                        "before timing out.\n")
        f.write(_noise_block(rng, step)[:100_000])


def timed(cmd):
    """Run `cmd` under /usr/bin/time -v; return (seconds, peak RSS in MB, stdout)."""
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1)) / 1024
    return seconds, rss, proc.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="100,1000", help="log sizes in MB, comma separated")
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "dsdiag-bench"))
    p.add_argument("--dsdiag", default=f"{sys.executable} -m classifier")
    args = p.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    patterns = work / "patterns.txt"
    patterns.write_text(subprocess.run(args.dsdiag.split() + ["rules", "export", "--grep"], cwd=ROOT,
                                       capture_output=True, text=True, check=True).stdout)
    rows = []
    for mb in (int(x) for x in args.sizes.split(",")):
        log = work / f"job-{mb}MB.log"
        if not log.exists():
            print(f"writing {log} ...", file=sys.stderr)
            write_log(log, mb)
        g_s, g_rss, _ = timed(["grep", "-ciE", "-f", str(patterns), str(log)])
        d_s, d_rss, out = timed(args.dsdiag.split() + ["--format", "json", "--exit-zero", str(log)])
        category = re.search(r'"category": "(\w+)"', out)
        rows.append((mb, g_s, d_s, g_rss, d_rss, category.group(1) if category else "?"))
    print(f"{'size':>7} {'grep s':>8} {'dsdiag s':>9} {'ratio':>6} {'grep MB':>8} {'dsdiag MB':>10}  category")
    for mb, g_s, d_s, g_rss, d_rss, cat in rows:
        print(f"{mb:>5}MB {g_s:>8.2f} {d_s:>9.2f} {d_s / g_s:>6.2f} {g_rss:>8.1f} {d_rss:>10.1f}  {cat}")
    if len(rows) > 1:
        print(f"peak RSS {rows[-1][0]}MB vs {rows[0][0]}MB: {rows[-1][4] / rows[0][4]:.2f}x")


if __name__ == "__main__":
    main()
