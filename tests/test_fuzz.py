"""The CI slice of benchmarks/fuzz.py: a fixed seed, 200 inputs in process and 20 through the
CLI, every invariant held (no exception, strict JSON in any locale, a documented exit code),
and a slice of the fast mode over two worker processes."""

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


def test_the_fast_mode_checks_numbered_inputs_over_workers():
    lines = []
    failures = fuzz.run_fast(seed=16, start=1000, inputs=60, workers=2, progress=1e9,
                             report=lines.append)
    assert not failures, "\n".join(lines)
    assert lines[-2].startswith("seed 16: 60 of 60 inputs") and "--start 1060" in lines[-2]


def test_a_numbered_input_is_the_same_whatever_ran_before_it():
    logs = fuzz.corpus_logs(fuzz.SMALL_SIZE)
    later = fuzz.numbered_input(7, 41, logs)
    for n in range(5):
        fuzz.numbered_input(7, n, logs)
    assert fuzz.numbered_input(7, 41, logs) == later != fuzz.numbered_input(7, 42, logs)
