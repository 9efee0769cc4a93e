"""Score the public corpus with 20,000 healthy multi-rank lines in front of every case.

    python benchmarks/noise_public.py [--split test] [--lines 20000] [--noise dev-none] [-v]

The hidden real-world sets are scored both as pasted and with such noise in front; this is
the same check on our own public cases (tests/noise.py makes the lines, deterministic).
`--noise dev-none` puts real healthy pastes in front instead: every public-dev `none` case
that dsdiag diagnoses `none` on its own, joined (about 600 lines); those cases themselves are
then left out of the score.
"""

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from classifier.corpus.evaluate import find_cases  # noqa: E402
from classifier.diagnosis.diagnose import diagnose_job  # noqa: E402
from classifier.diagnosis.read import Warnings, read_lines  # noqa: E402
from noise import healthy_lines  # noqa: E402


def _text(log) -> str:
    return "".join(r.text + "\n" for r in read_lines(str(log), Warnings()))


def main() -> int:
    """Print accuracy and false alarms per split, plain and with noise in front."""
    p = argparse.ArgumentParser()
    p.add_argument("--split", choices=("dev", "test", "all"), default="all")
    p.add_argument("--lines", type=int, default=20000)
    p.add_argument("--noise", choices=("generated", "dev-none"), default="generated")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list the dev cases whose category the noise changes (test cases never)")
    args = p.parse_args()
    cases = [(log, meta) for log, meta in find_cases(ROOT / "corpus") if meta.get("origin") == "public"]
    skip = set()
    if args.noise == "dev-none":
        skip = {log for log, meta in cases if meta["split"] == "dev" and meta["label"] == "none"
                and diagnose_job([str(log)])["category"] == "none"}
        noise = "".join(_text(log) for log in sorted(skip))
    else:
        noise = "\n".join(healthy_lines(args.lines)) + "\n"
    size = f"{noise.count(chr(10))} lines of {args.noise} noise"
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for log, meta in cases:
            if log in skip or args.split not in ("all", meta["split"]):
                continue
            text = _text(log)
            noisy = Path(tmp) / log.name.replace(".gz", "")
            noisy.write_text(noise + text, encoding="utf-8", errors="surrogateescape")
            plain = diagnose_job([str(log)])["category"]
            loud = diagnose_job([str(noisy)])["category"]
            row = rows.setdefault(meta["split"], {"n": 0, "plain": 0, "noisy": 0, "quiet": 0,
                                                  "fa_plain": 0, "fa_noisy": 0})
            if args.verbose and plain != loud and meta["split"] == "dev":
                print(f"  dev {log}: {meta['label']}: {plain} -> {loud}", flush=True)
            row["n"] += 1
            row["plain"] += plain == meta["label"]
            row["noisy"] += loud == meta["label"]
            if meta["label"] in ("none", "unknown"):
                row["quiet"] += 1
                row["fa_plain"] += plain not in ("none", "unknown")
                row["fa_noisy"] += loud not in ("none", "unknown")
    for split, r in sorted(rows.items()):
        q = max(1, r["quiet"])
        print(f"public-{split}: {r['n']} cases; accuracy {r['plain'] / r['n']:.1%} as pasted, "
              f"{r['noisy'] / r['n']:.1%} with {size} in front; none/unknown "
              f"called a failure {r['fa_plain'] / q:.1%} / {r['fa_noisy'] / q:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
