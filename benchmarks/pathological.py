"""Per-byte cost of pathological inputs against a normal log of the same size, with peak RSS.

    python benchmarks/pathological.py [--mb 16] [--dir /tmp/dsdiag-patho] [--repeat 1]

Each class is written once (cached) at the same size as the normal log — a healthy 256-rank
log from benchmarks/scale.py's generator — and run through `dsdiag --format json` under
`/usr/bin/time`. It prints seconds, peak RSS, the per-byte cost ratio to the normal log (the
bar: 2x) and the warnings dsdiag gave. Run it on a quiet machine, or read the ratios, which
are measured in the same moment as the normal log they divide by. Compressed bombs are
listed by their decompressed size; they stop at the ratio limit (classifier/diagnosis/read.py).
"""

import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def _fill(line_fn, size):
    """Lines from line_fn(i) until `size` bytes."""
    out, total, i = [], 0, 0
    while total < size:
        line = line_fn(i)
        out.append(line)
        total += len(line) + 1
        i += 1
    return ("\n".join(out) + "\n").encode()


def classes(size):
    """(name, bytes) of each input class, `size` bytes each (bombs: compressed bytes)."""
    from scale import _noise_block
    rng = random.Random(1)
    normal, step = [], 0
    while sum(map(len, normal)) < size:
        normal.append(_noise_block(rng, step))
        step += 100
    yield "normal", "".join(normal).encode()[:size]
    yield "empty_lines", b"\n" * size
    yield "keyword_storm (exit)", _fill(lambda i: "exit", size)
    yield "deep_indentation", _fill(lambda i: " " * 4000 + f"x = {i}", size)
    yield "prefix_storm", _fill(lambda i: "1: [rank3]: [default3]: worker-1: " * 40 + "step", size)
    chain = ["Traceback (most recent call last):",
             '  File "/opt/app/train.py", line 10, in step',
             "    loss.backward()", "RuntimeError: inner failure", "",
             "During handling of the above exception, another exception occurred:", ""]
    yield "traceback_chain", _fill(lambda i: chain[i % len(chain)], size)
    yield "retry_storm", _fill(lambda i: f"[W socket.cpp:{i % 900}] [c10d] The client socket has "
                                         f"failed to connect to [node{i % 64}]:29500 "
                                         f"(errno: 111 - Connection refused).", size)
    yield "retry_storm_torchrun", _fill(lambda i: f"[rank{i % 8}]:[W socket.cpp:{i % 900}] [c10d] The "
                                                  f"client socket has failed to connect to "
                                                  f"[node{i % 64}]:29500 (errno: 111 - Connection "
                                                  f"refused).", size)
    yield "long_near_miss_lines", _fill(lambda i: "a" * 8100 + ".so undefined symbol: x", size)
    yield "slash_runs", _fill(lambda i: "/" * 30000, size)
    yield "gzip_newline_bomb", gzip.compress(b"\n" * (64 << 20), 9) * 160  # 10 GiB inflated


def measure(path):
    """(seconds, peak RSS MB, warning codes) of one dsdiag run."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "classifier",
                           "--format", "json", str(path)], capture_output=True, cwd=ROOT)
    seconds, rss_kb = proc.stderr.decode().strip().splitlines()[-1].split()
    try:
        codes = [w["code"] for w in json.loads(proc.stdout)["warnings"]]
    except ValueError:
        codes = [f"exit {proc.returncode}"]
    return float(seconds), int(rss_kb) / 1024, codes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, default=16)
    p.add_argument("--dir", default="/tmp/dsdiag-patho")
    args = p.parse_args()
    size = args.mb << 20
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows, base = [], None
    for name, data in classes(size):
        path = folder / (name.split()[0] + f"_{args.mb}mb.log" + (".gz" if "gzip" in name else ""))
        if not path.exists():
            path.write_bytes(data)
        seconds, rss, codes = measure(path)
        if base is None:
            base = seconds
        rows.append((name, path.stat().st_size, seconds, rss, seconds / base, codes))
        print(f"{name:24s} {path.stat().st_size / 1e6:8.1f} MB {seconds:7.2f} s {rss:6.0f} MB "
              f"{seconds / base:5.2f}x  {','.join(codes)}", flush=True)


if __name__ == "__main__":
    main()
