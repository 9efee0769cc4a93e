"""Per-message answers kept for a message's next copies (prefix peel, keyword lookup, marker
kind, frame, event and step words, NCCL host) change no diagnosis: a log read with every table
full of other logs' answers is diagnosed as one read with the tables empty."""

import json

from classifier.diagnosis import events, normalize, signals, topology, traceback
from classifier.diagnosis.diagnose import diagnose_job
from classifier.rules.load import default_rules
from conftest import ROOT

KEPT = (normalize._KEPT_PEEL, signals._KEPT_KIND, traceback._kept_frame, events._kept_step,
        events._kept_event, topology._kept_nccl_host)


def _empty_tables(rules):
    for table in KEPT:
        table.cache_clear()
    rules.keyword_index()._kept.clear()


def test_kept_answers_are_the_answers():
    rules = default_rules()
    logs = sorted((ROOT / "corpus").rglob("*.log"))[::25][:60]
    assert len(logs) >= 30
    warm = [json.dumps(diagnose_job([str(p)], rules), sort_keys=True) for p in logs]
    for log, expected in zip(reversed(logs), reversed(warm)):
        _empty_tables(rules)
        got = json.dumps(diagnose_job([str(log)], rules), sort_keys=True)
        assert got == expected, log.name


def test_long_messages_are_not_kept():
    # A message too long to be kept still gets its answer, and leaves the table as it was.
    normalize._KEPT_PEEL.cache_clear()
    text = "[rank3]: " + "x" * normalize._KEPT_BELOW
    assert normalize._peel(text) == normalize.peel_prefixes(text)
    assert normalize._KEPT_PEEL.cache_info().currsize == 0
