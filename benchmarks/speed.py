"""How long does one diagnosis take? Times the real CLI against a bare `import yaml, regex`.

    python benchmarks/speed.py [--runs 5]

Logs: the bundled demo (218 lines) and the same failure behind 20,000 healthy lines.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from noise import healthy_lines  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "zero3_oom_rank3_of_16.log"


def _time(cmd, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        noisy = Path(tmp) / "noisy.log"
        with noisy.open("w") as f:
            for line in healthy_lines(20000):
                f.write(line + "\n")
            f.write(DEMO.read_text())
        base = _time([sys.executable, "-c", "import yaml, regex"], args.runs)
        print(f"python -c 'import yaml, regex'      {base * 1000:7.0f} ms")
        for name, path in (("demo (218 lines)", DEMO), ("20k noise + demo", noisy)):
            t = _time([sys.executable, "-m", "classifier", "--format", "json", str(path)], args.runs)
            print(f"dsdiag {name:<28} {t * 1000:7.0f} ms  ({t / base:.1f}x the bare import)")


if __name__ == "__main__":
    main()
