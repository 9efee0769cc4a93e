"""The readers' shared literal pass (classifier/diagnosis/literals.py): a line's mask never
lacks a literal its message holds, and diagnoses with the masks equal those without them."""

import json
import re

import pytest

from classifier.diagnosis import literals
from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.normalize import _GIST_FROM, normalize
from classifier.diagnosis.read import RawLine
from classifier.rules.load import default_rules
from conftest import ROOT

pytest.importorskip("hyperscan")

ODD = ["Traceback (most recent call last):", "\u212aILLED PROCESS 12", "İnit COMPLETE", "❱ 12 x",
       "F0102 03:04:05.678 fatal", "NCCL INFO nranks 8", "[Rank 3] Timeout at NCCL work: 7",
       "x" * (_GIST_FROM - 1) + "step", "Exception raised from foo at bar.cpp:12", ""]


def _messages():
    logs = sorted((ROOT / "corpus").rglob("*.log"))[::9]
    for path in logs:
        raw = (RawLine(str(path), n, t) for n, t in
               enumerate(path.read_text(errors="replace").splitlines(), 1))
        yield from (line.msg for line in normalize(raw))
    yield from ODD


def _holds(expr, caseless, regex, msg):
    text = msg.lower() if caseless else msg
    return re.search(expr, text) is not None if regex else expr in text


def test_masks_hold_every_literal_there():
    mask_of = literals.masker()
    assert mask_of is not None
    exprs = list(literals._exprs)
    seen = 0
    for msg in _messages():
        mask = mask_of(msg)
        if len(msg) >= _GIST_FROM:
            assert mask == literals.ALL
            continue
        seen += 1
        for bit, (expr, caseless, regex) in enumerate(exprs):
            if _holds(expr, caseless, regex, msg):
                assert mask >> bit & 1, (msg, expr)
    assert seen > 1000


def test_masks_change_no_diagnosis():
    rules = default_rules()
    index = rules.keyword_index()
    index.prepare()  # Hyperscan loaded: the masks are on from the first line
    assert index.hyperscan_loaded
    logs = sorted((ROOT / "corpus").rglob("*.log"))[::30][:40]
    with_masks = [json.dumps(diagnose_job([str(p)], rules), sort_keys=True) for p in logs]
    saved = literals._state[:]
    literals._state[:] = [None]  # as without the Hyperscan wheel: every test runs
    try:
        without = [json.dumps(diagnose_job([str(p)], rules), sort_keys=True) for p in logs]
    finally:
        literals._state[:] = saved
    assert with_masks == without
