"""Time the full diagnosis on inputs built to be slow: every rule keyword followed by 64 KiB of
one character, with several lines in a row so the multi-line windows are exercised too.

    python benchmarks/adversarial.py        # prints the slowest cases
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from classifier.diagnosis.diagnose import diagnose_job  # noqa: E402
from classifier.diagnosis.read import MAX_LINE  # noqa: E402
from classifier.rules.load import default_rules  # noqa: E402


def cases(rules):
    """Yield (name, bytes) adversarial inputs derived from the rules' own keywords."""
    keywords = sorted({k for r in rules.rules for k in r.keywords})
    for kw in keywords:
        for fill in ("a", " ", ".", "0", "/"):
            line = (kw + " " + fill * MAX_LINE).encode()[:MAX_LINE]
            yield f"{kw!r}+{fill!r}", b"\n".join([line] * 3) + b"\n"


def main():
    rules = default_rules()
    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adv.log"
        for name, data in cases(rules):
            path.write_bytes(data)
            start = time.perf_counter()
            diagnose_job([str(path)], rules)
            timings.append((time.perf_counter() - start, name))
    timings.sort(reverse=True)
    print(f"{len(timings)} adversarial inputs; slowest:")
    for seconds, name in timings[:10]:
        print(f"  {seconds * 1000:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
