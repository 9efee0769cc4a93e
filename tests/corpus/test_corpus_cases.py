"""Every labelled corpus case is a test (`pytest -k <case name>`).

A case the tool is known to get wrong carries `xfail: <reason>` in its sidecar: it runs as a
strict xfail, so fixing it (or breaking it differently) is noticed, and it is never deleted.
"""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from classifier.corpus.evaluate import culprit_score, find_cases
from classifier.rules.load import default_rules
from conftest import ROOT

CASES = list(find_cases(ROOT / "corpus"))


def _param(log, meta):
    marks = [pytest.mark.xfail(strict=True, reason=str(meta["xfail"]))] if meta.get("xfail") else []
    return pytest.param(log, meta, id=f"{meta['label']}/{log.name.split('.')[0]}", marks=marks)


@pytest.mark.parametrize("log,meta", [_param(*c) for c in CASES])
def test_corpus_case(log, meta):
    d = diagnose_job([str(log)], default_rules())
    # The regex budget (classifier/diagnosis/budget.py) is a backstop real logs never reach.
    assert not {w["code"] for w in d["warnings"]} & {"regex_budget", "regex_line_budget"}
    # The category is the contract; whether the evidence hits the labelled lines is a score
    # (`dsdiag eval` reports the hit rate) — labellers mark different lines of one cascade.
    assert d["category"] == meta["label"], (d["rule"], d["evidence"][:1])
    if meta.get("culprit"):  # a multi-rank case names the rank and host it started on
        assert culprit_score(meta, d)["culprit_hit"], (meta["culprit"], d["culprit"])
