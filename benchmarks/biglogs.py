"""The big logs issue 15 is judged on: dsdiag side by side with wc -l, grep and ripgrep.

    python benchmarks/biglogs.py [--mb 1000] [--kinds mild,torchrun,dense] [--rounds 3]
                                 [--gz] [--small 30] [--dir /tmp/dsdiag-big]

Kinds (each written once, cached in --dir, deterministic):
  mild      a 64-rank job (benchmarks/scale.py's generator) ending in one rank's CUDA OOM
  torchrun  the same lines behind torchrun --tee's `[defaultN]:` prefixes
  dense     a healthy job where 20% of lines say error / failed / exception / timeout /
            NCCL WARN / overflow in harmless contexts (env echoes, urllib3 retries,
            UserWarnings, early OVERFLOW skips, metric dicts); it finishes normally

Rounds interleave `wc -l` (the read floor), `LC_ALL=C grep -E -c -f PATTERNS` (45 rule
keywords across the categories), `rg -c -f PATTERNS` when installed and `dsdiag --format
json`, each under /usr/bin/time. Per tool: best and median seconds, the ratio to grep (the
bar for dsdiag: 1.0), peak RSS (the bar: 64 MB) and dsdiag's answer (mild, torchrun:
gpu_oom; dense: none), then how many lines the prefilter selected. --gz adds a .gz of each
log against `gzip -dc | grep` (bar: 1.2x); --small MB adds the first MB of a mild log
against grep plus 3x the start-up of `python3 -c 'import yaml, regex'` (and with --gz its
.gz against 1.2x `gzip -dc | grep`).
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import scale  # noqa: E402

scale.RANKS = 64
WANT = {"mild": "gpu_oom", "torchrun": "gpu_oom", "dense": "none"}


def _prefixed(text):
    """torchrun --tee: every line behind `[defaultN]:`, N the local rank."""
    out = []
    for i, line in enumerate(text.split("\n")):
        m = re.match(r"\[rank(\d+)\]:", line)
        local = int(m.group(1)) % 8 if m else i % 8
        out.append(f"[default{local}]:{line[m.end():] if m else line}" if line else line)
    return "\n".join(out)


_HARMLESS = (
    "[rank{r}]: NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_TIMEOUT=1800",
    "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
    "status=None)) after connection broken by 'NewConnectionError('<urllib3.connection.HTTPSConnection "
    "object at 0x7f{a:x}>: Failed to establish a new connection: [Errno 111] Connection refused')': "
    "/api/v1/metrics",
    "/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:460: UserWarning: torch.utils.checkpoint: "
    "the use_reentrant parameter should be passed explicitly; an error will be raised in a future release",
    "[2024-10-02 14:00:{s:02d},000] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank "
    "{r} Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1",
    "{{'eval_loss': 1.{a}, 'eval_failed': 0, 'timeouts': 0, 'errors': 0, 'step': {s}}}",
    "[rank{r}]: metrics: failed=0 skipped=0 exceptions=0 timeout_s=1800 error_rate=0.000",
    "node{n:03d}:4{r:04d}:4{r:04d} [{g}] NCCL INFO NET/IB : No device found; timeout=22 retry_cnt=7",
    "[rank{r}]: dataloader worker {g}: handled exception in prefetch (recovered), error count 0",
    "wandb: WARNING Network error (ReadTimeout), entering retry loop.",
    "[rank{r}]: NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
)


def _dense_block(rng, step):
    """About 1,000 lines of a healthy job; 20% of them carry a failure word harmlessly."""
    out = []
    for line in scale._noise_block(rng, step).split("\n"):
        if not line:
            continue
        out.append(line)
        if rng.random() < 0.25:  # 0.25 / 1.25 = 20% of all lines
            # OVERFLOW skips come early on, while the loss scale settles (the first 20 steps).
            t = rng.choice(_HARMLESS if step < 20 else _HARMLESS[:3] + _HARMLESS[4:])
            out.append(t.format(r=rng.randrange(64), a=rng.getrandbits(20), s=step % 60,
                                n=rng.randrange(8), g=rng.randrange(8)))
    return "\n".join(out) + "\n"


def write(kind, path, megabytes):
    """Write the `kind` log of about `megabytes` MB at `path`."""
    if kind in ("mild", "torchrun"):
        tmp = path.with_suffix(".tmp")
        scale.write_log(tmp, megabytes)
        if kind == "mild":
            tmp.replace(path)
            return
        with open(tmp, encoding="utf-8", newline="") as src, \
                open(path, "w", encoding="utf-8", newline="") as dst:
            while block := src.read(8 << 20):
                cut = block.rfind("\n") + 1
                rest = block[cut:] + (src.readline() if cut < len(block) else "")
                dst.write(_prefixed(block[:cut] + rest))
        tmp.unlink()
        return
    rng = random.Random(megabytes)
    target, written, step = megabytes * 1_000_000, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target - 2000:
            block = _dense_block(rng, step)
            f.write(block)
            written += len(block)
            step += 1
        f.write("[INFO] [launch.py:351:main] Process 4242 exits successfully.\n"
                "{'train_runtime': 86400.1, 'train_samples_per_second': 12.3, 'train_loss': 1.21}\n")


def patterns(path):
    """45 grep -E patterns: the rules' keywords, taken round-robin across categories."""
    from classifier.rules.load import default_rules
    by_cat = {}
    for rule in default_rules().rules:
        by_cat.setdefault(rule.category, []).extend(k for k in rule.keywords if len(k) > 5)
    chosen, i = [], 0
    while len(chosen) < 45:
        for cat in sorted(by_cat):
            if i < len(by_cat[cat]) and len(chosen) < 45 and by_cat[cat][i] not in chosen:
                chosen.append(by_cat[cat][i])
        i += 1
    path.write_text("".join(re.sub(r"([][\\.^$*+?(){}|])", r"\\\1", k) + "\n" for k in chosen))


def selected(log):
    """(selected, total) lines of `log` through the prefilter, counted in-process."""
    from classifier.diagnosis.prefilter import select_lines
    from classifier.diagnosis.read import InputLimits, Warnings, byte_chunks
    from classifier.rules.load import default_rules
    warnings = Warnings()
    chunks = byte_chunks(str(log), warnings, 4 << 20, InputLimits.from_env())
    picked = sum(1 for _ in select_lines(chunks, str(log), warnings, default_rules().finder()))
    total = 0
    with open(log, "rb") as fh:
        while block := fh.read(8 << 20):
            total += block.count(b"\n")
    return picked, total


def timed(cmd, shell=False):
    """(seconds, peak RSS MB, stdout) of `cmd` under /usr/bin/time."""
    full = ["/usr/bin/time", "-f", "TIME %e %M"] + (["sh", "-c", cmd] if shell else cmd)
    proc = subprocess.run(full, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    secs, kb = re.findall(r"TIME ([\d.]+) (\d+)", proc.stderr)[-1]
    return float(secs), int(kb) / 1024, proc.stdout


def startup_baseline(rounds):
    """Best seconds of `python3 -c 'import yaml, regex'`: the start-up every Python tool pays."""
    return min(timed([sys.executable, "-c", "import yaml, regex"])[0] for _ in range(rounds))


def compare(name, want, tools, rounds):
    """Time each (label, cmd, shell) of `tools` in interleaved rounds; print one row per tool."""
    times = {label: [] for label, _, _ in tools}
    rss, out = {}, ""
    for _ in range(rounds):
        for label, cmd, shell in tools:
            secs, mb, stdout = timed(cmd, shell)
            times[label].append(secs)
            rss[label] = max(rss.get(label, 0), mb)
            if label == "dsdiag":
                out = stdout
    grep = min(times["grep"])
    result = json.loads(out)
    verdict = "right" if result["category"] == want else f"WRONG (want {want})"
    for label, _, _ in tools:
        best = min(times[label])
        print(f"{name:>14} {label:>8} {best:7.2f} s (median {statistics.median(times[label]):6.2f})"
              f" {best / grep:6.2f}x grep {rss[label]:6.0f} MB"
              + (f"  {result['category']} {verdict}" if label == "dsdiag" else ""))
    return min(times["dsdiag"]), grep


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=1000)
    p.add_argument("--kinds", default="mild,torchrun,dense")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "dsdiag-big"))
    p.add_argument("--gz", action="store_true", help="also a .gz of each: against gzip -dc | grep")
    p.add_argument("--small", type=int, default=0, metavar="MB",
                   help="also the first MB of the mild log: against grep + 3x start-up")
    args = p.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    pats = work / "patterns45.txt"
    patterns(pats)
    dsdiag = [sys.executable, "-m", "classifier", "--format", "json", "--exit-zero"]
    rg = shutil.which("rg")
    for kind in args.kinds.split(","):
        log = work / f"{kind}-{args.mb}MB.log"
        if not log.exists():
            print(f"writing {log} ...", file=sys.stderr)
            write(kind, log, args.mb)
        tools = [("wc -l", ["wc", "-l", str(log)], False),
                 ("grep", ["grep", "-E", "-c", "-f", str(pats), str(log)], False)]
        if rg:
            tools.append(("rg", [rg, "-c", "-f", str(pats), str(log)], False))
        tools.append(("dsdiag", dsdiag + [str(log)], False))
        compare(log.name, WANT[kind], tools, args.rounds)
        picked, total = selected(log)
        print(f"{'':>14} selected {picked:,} of {total:,} lines ({100 * picked / total:.2f}%)")
        if args.gz:
            gz = log.with_suffix(".log.gz")
            if not gz.exists():
                subprocess.run(f"gzip -1 -c {log} > {gz}", shell=True, check=True)
            compare(gz.name, WANT[kind], [
                ("grep", f"gzip -dc {gz} | grep -E -c -f {pats}", True),
                ("dsdiag", dsdiag + [str(gz)], False)], args.rounds)
    if args.small:
        small = work / f"mild-{args.small}MB.log"
        if not small.exists():
            write("mild", small, args.small)
        base = startup_baseline(args.rounds)
        ours, grep = compare(small.name, "gpu_oom", [
            ("grep", ["grep", "-E", "-c", "-f", str(pats), str(small)], False),
            ("dsdiag", dsdiag + [str(small)], False)], args.rounds)
        print(f"{'':>14} bar: grep + 3x start-up ({base:.3f} s) = {grep + 3 * base:.2f} s; "
              f"dsdiag {ours:.2f} s")
        if args.gz:
            gz = small.with_suffix(".log.gz")
            if not gz.exists():
                subprocess.run(f"gzip -1 -c {small} > {gz}", shell=True, check=True)
            ours, grep = compare(gz.name, "gpu_oom", [
                ("grep", f"gzip -dc {gz} | grep -E -c -f {pats}", True),
                ("dsdiag", dsdiag + [str(gz)], False)], args.rounds)
            print(f"{'':>14} bar: 1.2x gzip -dc | grep = {1.2 * grep:.3f} s; dsdiag {ours:.3f} s "
                  f"({ours / grep:.2f}x)")

if __name__ == "__main__":
    main()
