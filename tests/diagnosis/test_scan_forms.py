"""Hyperscan looks for some vocabulary gates by their literal-led scan forms (Term.scan) and
checks the gate on the lines they find: every line a gate matches must hold one of its forms,
and both finders must still pick the same lines."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifier import vocabulary
from classifier.corpus.evaluate import find_cases
from classifier.rules.load import default_rules
from conftest import LOGS, ROOT

SCANNED = [(re.compile(t.raw.encode(), re.M), [re.compile(f.encode(), re.M) for f in t.scan])
           for t in vocabulary.ALL_TERMS if t.scan]
# Pieces the scanned gates are made of, and their near misses.
PIECES = st.sampled_from(["Error", "Exception", "Interrupt", "Exit", "Failure", "Fault", "Value",
                          "error", "a", "Z", "_", ".", "(", ")", ",", "=", ":", " ", "\\", "\x1b",
                          "\n", "F", "1203", "12:00:01", "0", "9", "torch", "._dynamo", ".exc.",
                          "Unsupported", "NewConnection", "é"])


def _uncovered(data):
    """The lines of `data` a scanned gate matches that none of its scan forms finds."""
    out = []
    for line in data.split(b"\n"):
        for gate, forms in SCANNED:
            if gate.search(line) and not any(f.search(line) for f in forms):
                out.append((gate.pattern, line))
    return out


def test_there_are_scan_forms_to_test():
    assert len(SCANNED) >= 3


@settings(max_examples=400, derandomize=True, deadline=None)
@given(parts=st.lists(PIECES, max_size=30))
def test_every_line_a_gate_matches_holds_one_of_its_scan_forms(parts):
    assert not _uncovered("".join(parts).encode("utf-8"))


def test_every_corpus_and_test_log_line_a_gate_matches_holds_one_of_its_scan_forms():
    logs = [log for log, _ in find_cases(ROOT / "corpus")] + sorted(LOGS.glob("*.log"))
    missed = []
    for log in logs:
        missed += _uncovered(log.read_bytes())
    assert not missed, missed[:10]


@pytest.mark.parametrize("line", [
    "torch._dynamo.exc.Unsupported: call_function",
    "[rank1]: F1203 12:00:01.123456 4242 op.cc:88] Check failed",
    "RuntimeError: CUDA error: out of memory",
    "...ds_summary()AssertionError",
    "NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a>: refused')",
    "ASYNC_ERROR_HANDLING=1 valueError x",
])
def test_both_finders_pick_the_same_lines_where_scan_forms_apply(line):
    pytest.importorskip("hyperscan", reason="installed with dsdiag on Linux x86_64")
    rules = default_rules()
    data = f"healthy\n{line}\nhealthy\n".encode()
    assert rules.finder("hyperscan").line_starts(data) == rules.finder("re").line_starts(data)
