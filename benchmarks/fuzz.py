"""Fuzz the diagnosis: mutated corpus logs and random bytes, in-process and through the CLI.

    python benchmarks/fuzz.py [--seed 1] [--inputs 10000] [--cli 100] [--max-size 16384]
                              [--keep DIR]
    python benchmarks/fuzz.py --fast [--seed 1] [--start 0] [--inputs 1000000] [--workers N]
                              [--progress 60] [--keep DIR]

Each input is a corpus log (or random bytes) put through one or two mutations: byte flips,
truncation, line duplication, prefix insertion, splicing two logs, a huge line, a storm of
one line. In process, `diagnose_job` must return without an exception, a result that
serialises to strict JSON (no NaN, no lone surrogate) and renders in every format. Through
the CLI (`python -m classifier --format json`, under the C, C.UTF-8 and POSIX locales in
turn), the exit code must be 0, 1 or 2, stdout strict UTF-8 JSON, stderr free of tracebacks.
It prints counts, the rate, the slowest cases and the peak RSS; a failing input is saved
under --keep. The same seed gives the same inputs.

--fast is the long run: small inputs (corpus logs cut to 2 KB, mutations grown to tens of KB
at most), in process only, the Kubernetes message and the Slurm comment checked too, over N
worker processes (40-100 inputs/s per core on a shared 2-core machine). Input N of a seed is the
same whatever ran before it, so a run splits into ranges (--start) and resumes where its
progress line says; each progress line gives the counts, the rate, the failures, a worker's
peak RSS and the slowest cases, and a failure names the --dump command that reproduces it.
"""

import argparse
import gzip
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXIT_CODES = {0, 1, 2}
LOCALES = ("C", "C.UTF-8", "POSIX")
PREFIXES = (b"[rank3]: ", b"1: ", b"worker-1: ", b"[1,3]<stderr>:", b"(RayTrainWorker pid=42) ",
            b"2024-10-02T14:00:00.123Z ", b"\x1b[31m", b"    ", b"\t", b"[default0]:")


def corpus_logs(limit_bytes):
    """The corpus's logs as bytes (decompressed), each cut to `limit_bytes`."""
    out = []
    for path in sorted((ROOT / "corpus").rglob("*.log*")):
        if path.suffix not in (".log", ".gz"):
            continue
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        out.append(data[-limit_bytes:])
    return out


def _flip(rng, data, _logs, _size):
    data = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def _truncate(rng, data, _logs, _size):
    return data[:rng.randrange(len(data) + 1)]


def _duplicate(rng, data, _logs, size):
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + [lines[i]] * rng.randint(2, size["copies"]) + lines[i + 1:])


def _prefix(rng, data, _logs, _size):
    prefix = b"".join(rng.choice(PREFIXES) for _ in range(rng.randint(1, 6)))
    return b"\n".join(prefix + line if rng.random() < 0.7 else line for line in data.split(b"\n"))


def _splice(rng, data, logs, _size):
    other = rng.choice(logs)
    return data[:rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]


def _huge_line(rng, data, _logs, size):
    fill = rng.choice((b"a", b" ", b".", b"/", b"0", b"\x00", b"\xff", b"(", b"x "))
    pos = rng.randrange(len(data) + 1)
    return data[:pos] + fill * rng.randint(1000, size["huge"]) + data[pos:]


def _storm(rng, data, _logs, size):
    line = rng.choice([line for line in data.split(b"\n") if line] or [b"exit"])[:200]
    return (line + b"\n") * rng.randint(*size["storm"])


def _random_bytes(rng, _data, _logs, size):
    return rng.randbytes(rng.randint(0, size["random"]))


MUTATIONS = {f.__name__[1:]: f for f in (_flip, _truncate, _duplicate, _prefix, _splice,
                                          _huge_line, _storm, _random_bytes)}


# How far mutations grow an input: the full profile reaches the 64 KiB line limit and the
# prefilter's line count; the small one (--fast) keeps inputs to a few KB, for millions of them.
SIZES = {"full": {"copies": 200, "huge": 200_000, "storm": (100, 5000), "random": 4096},
         "small": {"copies": 20, "huge": 20_000, "storm": (10, 300), "random": 2048}}


def make_input(rng, logs, profile="full"):
    """(name, bytes): a corpus log through one or two mutations, or random bytes."""
    data = rng.choice(logs)
    names = rng.sample(sorted(MUTATIONS), rng.choice((1, 1, 2)))
    for name in names:
        data = MUTATIONS[name](rng, data, logs, SIZES[profile])
    if rng.random() < 0.05:
        data, names = gzip.compress(data, 1), names + ["gzip"]
    return "+".join(names), data


def strict_json(text):
    """Parse JSON refusing NaN / Infinity (which Python's json accepts by default)."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def check_in_process(path, rules):
    """Diagnose `path` in process; return a problem string or None."""
    from classifier.diagnosis.diagnose import diagnose_job
    from classifier.integrations.k8s import MAX_BYTES, termination_message
    from classifier.integrations.slurm import comment_text
    from classifier.render import FORMATS, render
    try:
        result = diagnose_job([str(path)], rules)
        text = json.dumps(result, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")  # a lone surrogate cannot be encoded
        for fmt in FORMATS:
            buffer = io.StringIO()
            render(result, fmt, buffer, color=False)
            if fmt == "json":
                strict_json(buffer.getvalue())
        if len(termination_message(result).encode("utf-8")) > MAX_BYTES:
            return "the Kubernetes termination message is over its byte limit"
        comment = comment_text(result)
        if not comment.isprintable():
            return f"the Slurm comment holds a line break or control: {comment[:200]!r}"
    except Exception as exc:  # the invariant under test: nothing escapes
        return f"{type(exc).__name__}: {exc}"
    return None


def check_cli(path, locale):
    """Run the CLI on `path` under `locale`; return a problem string or None."""
    env = dict(os.environ, LC_ALL=locale, LANG=locale)
    env.pop("PYTHONIOENCODING", None)
    proc = subprocess.run([sys.executable, "-m", "classifier", "--format", "json", str(path)],
                          capture_output=True, env=env, cwd=ROOT, timeout=120)
    if proc.returncode not in EXIT_CODES:
        return f"exit code {proc.returncode}: {proc.stderr[-300:]!r}"
    if b"Traceback" in proc.stderr:
        return f"traceback: {proc.stderr[-300:]!r}"
    if proc.returncode == 2:
        return None if proc.stderr.count(b"\n") >= 1 and not proc.stdout else \
            f"exit 2 without a one-line error: {proc.stderr[-300:]!r}"
    try:
        strict_json(proc.stdout.decode("utf-8"))
    except ValueError as exc:
        return f"stdout is not strict UTF-8 JSON: {exc}"
    return None


def peak_rss_mb():
    """Peak RSS of this process and of its largest finished child, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, child


def run(seed, inputs, cli, max_size, keep=None, report=print, seconds=None):
    """Fuzz `inputs` cases in process and `cli` through the CLI; return the failures.

    With `seconds`, the in-process part stops early when that much time has passed.
    """
    from classifier.rules.load import default_rules
    rng = random.Random(seed)
    logs = corpus_logs(max_size)
    rules = default_rules()
    failures, timings = [], []
    counts = {"in_process": 0, "cli": 0, "bytes": 0}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dsdiag-fuzz-") as tmp:
        path = Path(tmp) / "case.log"
        for n in range(inputs + cli):
            if seconds is not None and n < inputs and time.perf_counter() - started > seconds:
                continue  # out of time: on to the CLI part
            name, data = make_input(rng, logs)
            path.write_bytes(data)
            t0 = time.perf_counter()
            if n < inputs:
                problem = check_in_process(path, rules)
                counts["in_process"] += 1
            else:
                problem = check_cli(path, LOCALES[n % len(LOCALES)])
                counts["cli"] += 1
            timings.append((time.perf_counter() - t0, len(data), name, n))
            counts["bytes"] += len(data)
            if problem:
                failures.append((n, name, problem))
                if keep:
                    Path(keep).mkdir(parents=True, exist_ok=True)
                    (Path(keep) / f"case{n}.log").write_bytes(data)
            if len(timings) > 50:
                timings = sorted(timings, reverse=True)[:10]
    elapsed = time.perf_counter() - started
    own, child = peak_rss_mb()
    report(f"seed {seed}: {counts['in_process']} in-process + {counts['cli']} CLI inputs, "
           f"{counts['bytes'] / 1e6:.1f} MB, {elapsed:.1f} s "
           f"({(counts['in_process'] + counts['cli']) / elapsed:.0f} inputs/s), "
           f"{len(failures)} failures")
    report(f"peak RSS: fuzzer {own:.0f} MB, largest CLI child {child:.0f} MB")
    report("slowest cases (seconds, bytes, mutations, case number):")
    for seconds, size, name, n in sorted(timings, reverse=True)[:5]:
        report(f"  {seconds:7.3f}  {size:9d}  {name}  #{n}")
    for n, name, problem in failures[:20]:
        report(f"FAIL #{n} {name}: {problem}")
    return failures


# --- the fast mode: small inputs, in process, over worker processes, resumable by number ---

SMALL_SIZE = 2048   # bytes kept of each corpus log in the fast mode
BATCH = 200         # inputs a worker takes at a time
HANG_S = 60         # an input that takes longer is reported as a hang
_worker = {}


class _Hang(BaseException):
    """Raised by the alarm in a worker: not an Exception, so no handler in dsdiag catches it."""


def numbered_input(seed, n, logs, profile="small"):
    """Input number `n` of `seed`, the same whatever ran before it: runs split and resume."""
    return make_input(random.Random(f"{seed}:{n}"), logs, profile)


def _init_worker(tmp, max_size, keep, hang_s):
    import signal
    from classifier.rules.load import default_rules
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent reports and stops the pool
    fd, path = tempfile.mkstemp(suffix=".log", dir=tmp)
    os.close(fd)
    _worker.update(logs=corpus_logs(max_size), rules=default_rules(), path=Path(path),
                   keep=keep, hang_s=hang_s)

    def alarm(_signum, _frame):
        raise _Hang()
    signal.signal(signal.SIGALRM, alarm)


def _run_batch(job):
    """Check inputs start..start+count-1 of `seed`; return counts, failures, slowest, RSS."""
    import signal
    seed, start, count = job
    w = _worker
    failures, slowest, size = [], [], 0
    for n in range(start, start + count):
        name, data = numbered_input(seed, n, w["logs"])
        w["path"].write_bytes(data)
        size += len(data)
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, w["hang_s"])
        try:
            problem = check_in_process(w["path"], w["rules"])
        except _Hang:
            problem = f"no answer within {w['hang_s']} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        slowest = sorted(slowest + [(time.perf_counter() - t0, len(data), name, n)])[-5:]
        if problem:
            failures.append((n, name, problem))
            if w["keep"]:
                Path(w["keep"]).mkdir(parents=True, exist_ok=True)
                (Path(w["keep"]) / f"seed{seed}-case{n}.log").write_bytes(data)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return start, count, size, failures, slowest, rss


def run_fast(seed, start, inputs, workers, max_size=SMALL_SIZE, keep=None, progress=60.0,
             report=print, hang_s=HANG_S):
    """Check inputs start..start+inputs-1 in process over `workers` processes; return failures.

    Every `progress` seconds (and at the end) it reports the inputs done, the rate, the
    failures, the peak RSS of a worker, the slowest cases, and where a stopped run resumes.
    """
    import multiprocessing
    import signal

    def stop(_signum, _frame):
        raise KeyboardInterrupt  # a killed run still reports where to resume, and cleans up
    previous = signal.signal(signal.SIGTERM, stop)
    jobs = [(seed, b, min(BATCH, start + inputs - b)) for b in range(start, start + inputs, BATCH)]
    done, size, failures, slowest, rss = 0, 0, [], [], 0.0
    finished = set()
    started = last = time.perf_counter()

    def summary():
        # Every batch below `resume` is done: a stopped run goes on from there.
        resume = next((b for _, b, _ in jobs if b not in finished), start + inputs)
        elapsed = time.perf_counter() - started
        report(f"seed {seed}: {done:,} of {inputs:,} inputs, {size / 1e6:.0f} MB, {elapsed:.0f} s "
               f"({done / max(elapsed, 1e-9):.0f} inputs/s over {workers} workers), "
               f"{len(failures)} failures, peak RSS of a worker {rss:.0f} MB; "
               f"resume with --start {resume}")
        report("  slowest: " + ", ".join(f"#{n} {sec:.2f}s {sz}B {name}"
                                         for sec, sz, name, n in reversed(slowest)))

    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # no disk in the loop
    with tempfile.TemporaryDirectory(prefix="dsdiag-fuzz-", dir=shm) as tmp, \
            ctx.Pool(workers, _init_worker, (tmp, max_size, keep, hang_s)) as pool:
        try:
            for b, count, nbytes, fails, slow, peak in pool.imap_unordered(_run_batch, jobs):
                finished.add(b)
                done, size, rss = done + count, size + nbytes, max(rss, peak)
                failures += fails
                slowest = sorted(slowest + slow)[-5:]
                for n, name, problem in fails:
                    report(f"FAIL #{n} {name}: {problem} (python benchmarks/fuzz.py --fast "
                           f"--seed {seed} --dump {n})")
                if time.perf_counter() - last >= progress:
                    last = time.perf_counter()
                    summary()
        except KeyboardInterrupt:
            pool.terminate()
            report("interrupted")
        finally:
            signal.signal(signal.SIGTERM, previous)
    summary()
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--inputs", type=int, default=10_000, help="in-process inputs")
    p.add_argument("--cli", type=int, default=100, help="inputs through the CLI (not with --fast)")
    p.add_argument("--max-size", type=int, help="bytes kept of each corpus log (default 16384; "
                                                 f"{SMALL_SIZE} with --fast)")
    p.add_argument("--keep", help="directory for failing inputs")
    p.add_argument("--seconds", type=float, help="stop the in-process part after this long")
    p.add_argument("--dump", type=int, metavar="N", help="write input number N to stdout and stop")
    p.add_argument("--fast", action="store_true",
                   help="small inputs, in process only, over --workers processes; input N "
                        "is the same whatever ran before it, so runs split and resume by --start")
    p.add_argument("--start", type=int, default=0, help="with --fast: the first input number")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="with --fast")
    p.add_argument("--progress", type=float, default=60, metavar="SECONDS",
                   help="with --fast: report progress this often")
    args = p.parse_args()
    max_size = args.max_size or (SMALL_SIZE if args.fast else 16384)
    if args.dump is not None:
        logs = corpus_logs(max_size)
        if args.fast:
            _, data = numbered_input(args.seed, args.dump, logs)
        else:
            rng = random.Random(args.seed)
            for _ in range(args.dump + 1):
                _, data = make_input(rng, logs)
        sys.stdout.buffer.write(data)
        return
    if args.fast:
        failures = run_fast(args.seed, args.start, args.inputs, args.workers, max_size,
                            args.keep, args.progress, report=partial(print, flush=True))
    else:
        failures = run(args.seed, args.inputs, args.cli, max_size, args.keep,
                       seconds=args.seconds)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
