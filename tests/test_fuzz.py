"""The CI slice of benchmarks/fuzz.py: a fixed seed, 200 inputs in process and 20 through the
CLI, every invariant held (no exception, strict JSON in any locale, a documented exit code)."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz  # noqa: E402


def test_a_derandomised_fuzz_slice_holds_every_invariant(tmp_path):
    lines = []
    failures = fuzz.run(seed=16, inputs=200, cli=20, max_size=16384, keep=tmp_path,
                        report=lines.append)
    assert not failures, "\n".join(lines)
    assert lines[0].startswith("seed 16: 200 in-process + 20 CLI inputs")


def test_the_same_seed_makes_the_same_inputs():
    import random
    logs = fuzz.corpus_logs(4096)
    first = [fuzz.make_input(random.Random(7), logs) for _ in range(1)]
    again = [fuzz.make_input(random.Random(7), logs) for _ in range(1)]
    assert first == again and first[0][1]
