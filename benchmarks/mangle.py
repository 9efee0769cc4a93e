"""Does a diagnosis survive the way people paste logs? Mangles every non-test corpus case.

    python benchmarks/mangle.py [-v] [--only NAME[,NAME]] [--sample N] [--seed S]

For each case of the corpus outside `split: test` (public dev, synthesized, real-run), the
original log and a set of deterministic transformations of it are diagnosed in process; the
table says per transformation how many diagnoses changed `category` from the original's, how
many of those fell to none/unknown (the failure was lost) or to another failure (a false
cause), and the accuracy against the label. `-v` lists every change. public-test cases are
never read: they are the held-out figure.
"""

import argparse
import gzip
import html
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from classifier.corpus.evaluate import find_cases, segment_of  # noqa: E402
from classifier.diagnosis.diagnose import diagnose_job  # noqa: E402
from classifier.rules.load import default_rules  # noqa: E402

QUIET = ("none", "unknown")
TRACEBACK = "Traceback (most recent call last)"
ERROR_WORD = re.compile(r"\b(?:\w*(?:Error|Exception)|Traceback|FAILED|WARN(?:ING)?|fatal|Killed)\b")


def _lines(text):
    return text.split("\n")


def wrap(width):
    """Hard breaks at `width` columns; the continuation lines carry no prefix."""
    def apply(text):
        out = []
        for line in _lines(text):
            out.extend([line[i:i + width] for i in range(0, len(line), width)] or [""])
        return "\n".join(out)
    return apply


def prefix(make):
    """Every line behind a prefix; `make(i)` gives line i's."""
    return lambda text: "\n".join(make(i) + line for i, line in enumerate(_lines(text)))


def json_record(text):
    """The whole log as one JSON logger record, `{"log": "...\\n..."}`."""
    return json.dumps({"log": text, "stream": "stderr"})


def python_repr(text):
    """The whole log as a Python string repr on one line."""
    return repr(text)


def ansi(text):
    """Red around the error words, as a colouring logger or terminal prints them."""
    return ERROR_WORD.sub(lambda m: f"\x1b[1;31m{m.group(0)}\x1b[0m", text)


def cut_last(text):
    """The last non-blank line cut at 60% of its length (a paste that stops mid-line)."""
    lines = _lines(text.rstrip("\n"))
    last = lines[-1]
    lines[-1] = last[:max(1, int(len(last) * 0.6))]
    return "\n".join(lines)


def second_half(text):
    """The paste starts half-way down the log."""
    lines = _lines(text)
    return "\n".join(lines[len(lines) // 2:])


def interleave(text):
    """Two ranks' copies of the last traceback (or the last 10 lines) interleaved line by
    line, the second one line behind the first, as unsynchronised stderr writes land."""
    lines = _lines(text.rstrip("\n"))
    start = max((i for i, line in enumerate(lines) if TRACEBACK in line), default=None)
    if start is None:
        start = max(0, len(lines) - 10)
    block = lines[start:]
    out = block[:1]
    for i in range(1, len(block) + 1):
        if i < len(block):
            out.append(block[i])
        out.append(block[i - 1])
    return "\n".join(lines[:start] + out)


def no_blank(text):
    return "\n".join(line for line in _lines(text) if line.strip())


def tabs(text):
    """Leading spaces become tabs, one per two columns (so nesting stays visible)."""
    def one(line):
        body = line.lstrip(" ")
        width = len(line) - len(body)
        return "\t" * ((width + 1) // 2) + body if width else line
    return "\n".join(one(line) for line in _lines(text))


def html_escaped(text):
    """The log as a scraped web page's text holds it: `&quot;`, `&lt;`, `&gt;`, `&#39;`, `&amp;`."""
    return html.escape(text, quote=True).replace("&#x27;", "&#39;")


def nbsp(text):
    """Every space a no-break space, as a browser's copy of a rendered page gives it."""
    return text.replace(" ", "\u00a0")


def curly_quotes(text):
    """Straight quotes turned typographic, as chat tools and word processors do outside code."""
    out = []
    for line in _lines(text):
        line = re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", line)
        line = re.sub(r"(?<![\w.])'(?=\w)", "\u2018", line)   # opening: before a word
        out.append(line.replace("'", "\u2019"))
    return "\n".join(out)


def truncate(width):
    """Every line cut at `width` columns and the rest lost, as some log viewers show them."""
    return lambda text: "\n".join(line[:width] for line in _lines(text))


TRANSFORMS = {
    "wrap80": wrap(80),
    "wrap120": wrap(120),
    "json_record": json_record,
    "python_repr": python_repr,
    "rank_prefix": prefix(lambda i: "[rank3]:"),
    "host_prefix": prefix(lambda i: "host-3: "),
    "iso_level": prefix(lambda i: f"2024-01-01T12:{i // 60 % 60:02d}:{i % 60:02d}.123Z INFO "),
    "pipe_level": prefix(lambda i: "2024-01-01 12:00:00 | INFO | "),
    "kubectl": prefix(lambda i: "trainer-7d9f8-worker-0 pytorch "),
    "md_quote": prefix(lambda i: "> "),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "ansi": ansi,
    "cut_last": cut_last,
    "second_half": second_half,
    "interleave": interleave,
    "no_blank": no_blank,
    "tabs": tabs,
    "html_escaped": html_escaped,
    "nbsp": nbsp,
    "curly_quotes": curly_quotes,
    "indent4": prefix(lambda i: "    "),
    "truncate160": truncate(160),
}


def _read(log):
    data = gzip.decompress(log.read_bytes()) if log.suffix == ".gz" else log.read_bytes()
    return data.decode("utf-8", "replace")


def _diagnose(text, tmp, rules):
    path = Path(tmp) / "case.log"
    path.write_text(text, encoding="utf-8", newline="")
    return diagnose_job([str(path)], rules)["category"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-v", "--verbose", action="store_true", help="list every changed diagnosis")
    p.add_argument("--only", help="comma-separated transformation names")
    p.add_argument("--sample", type=int, help="diagnose N cases drawn with --seed")
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--corpus", default=str(ROOT / "corpus"))
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(TRANSFORMS)
    cases = [(log, meta) for log, meta in find_cases(args.corpus) if meta.get("split") != "test"]
    if args.sample and args.sample < len(cases):
        cases = sorted(random.Random(args.seed).sample(cases, args.sample))
    rules = default_rules()
    stats = {n: {"changed": 0, "lost": 0, "false": 0, "right": 0} for n in ["original"] + names}
    changes = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for log, meta in cases:
            text = _read(log)
            base = _diagnose(text, tmp, rules)
            stats["original"]["right"] += base == meta["label"]
            for name in names:
                got = _diagnose(TRANSFORMS[name](text), tmp, rules)
                s = stats[name]
                s["right"] += got == meta["label"]
                if got != base:
                    s["changed"] += 1
                    s["lost" if got in QUIET else "false"] += 1
                    changes.append((name, segment_of(meta), log, meta["label"], base, got))
    n = len(cases)
    print(f"{n} cases ({', '.join(sorted({segment_of(m) for _, m in cases}))}), "
          f"{time.perf_counter() - start:.0f} s\n")
    print(f"{'transformation':<14} {'changed':>8} {'lost':>6} {'false':>6} {'accuracy':>9}")
    for name, s in stats.items():
        print(f"{name:<14} {s['changed']:>8} {s['lost']:>6} {s['false']:>6} {s['right'] / n:>8.1%}")
    print("\nchanged: category differs from the original's; lost: now none/unknown; "
          "false: now another failure")
    if args.verbose:
        for name, seg, log, label, base, got in changes:
            print(f"  {name:<12} [{seg}] {log.relative_to(ROOT) if log.is_relative_to(ROOT) else log}: "
                  f"{label}: {base} -> {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
