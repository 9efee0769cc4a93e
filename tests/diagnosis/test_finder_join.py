"""Hyperscan's keyword expressions, joined by reach and pruned of keywords another one covers
(finder._uncovered, HyperscanFinder.tables): the same lines, with the same reach, as one
expression per keyword, and fewer reports for a line with several keywords."""

import pytest

from classifier.diagnosis import finder
from classifier.diagnosis.gates import keyword_gate
from classifier.rules.load import default_rules
from classifier.vocabulary import ALL_TERMS
from conftest import ROOT

pytest.importorskip("hyperscan")


def spec(text, exact=False, before=2, after=2):
    return (text, exact, before, after)


@pytest.mark.parametrize("a, b, covered", [
    (spec("connection"), spec("connection refused"), True),
    (spec("loss scale"), spec("attempted loss scale"), True),      # after a space in b
    (spec("fault"), spec("segfaulted"), False),                     # inside a word
    (spec("refused", exact=True), spec("connection refused"), False),   # exact cannot cover any case
    (spec("refused"), spec("Connection Refused", exact=True), True),
    (spec("Refused", exact=True), spec("connection refused", exact=True), False),
    (spec("connection"), spec("connection refused", after=10), False),  # b reaches further
    (spec("[rank"), spec("x[rank0]"), True),                            # unbounded keyword
])
def test_covers(a, b, covered):
    assert finder._covers(a, b) is covered


def _plain_tables(specs):
    gates = [(t.lower(), None, keyword_gate(t, e), (b, a)) for t, e, b, a in specs]
    for term in ALL_TERMS:
        gates += [(lit, None, term.raw_gate, (finder.NEAR, finder.AFTER)) for lit in term.gates]
        if term.gate_pattern:
            gates.append((None, term.gate_pattern, term.raw_gate, (finder.NEAR, finder.AFTER)))
    return finder.HyperscanFinder.tables(gates, {t.raw_gate: t.scan for t in ALL_TERMS if t.scan})


def test_joined_expressions_select_what_one_per_keyword_selects():
    specs = sorted(default_rules()._select_keywords())
    joined = finder.make_finder(specs, ALL_TERMS, "hyperscan")
    plain = finder.HyperscanFinder(tables=_plain_tables(specs))
    assert len(finder._uncovered(specs)) < len(specs)
    # Every keyword on a line of its own, behind a letter, in a camel-cased word, at the end
    # of a chunk without its newline, and the corpus's logs.
    lines = []
    for text, _, _, _ in specs:
        lines += [text, f"x{text} y", f"[rank3]: {text.upper()}", f"Foo{text.capitalize()}", ""]
    chunk = "\n".join(lines).encode("utf-8")
    chunk += b"".join(p.read_bytes() for p in sorted((ROOT / "corpus").rglob("*.log"))[::25])
    found = joined.scan(chunk)
    assert found == plain.scan(chunk) and len(found) > 1000
    assert joined.scan(chunk + b"\nconnection refused") == plain.scan(chunk + b"\nconnection refused")


def test_a_line_with_several_keywords_is_reported_once():
    specs = [spec("connection refused"), spec("connection"), spec("retrying ("), spec("overflow")]
    joined = finder.make_finder(specs, (), "hyperscan")
    import hyperscan
    reports = []
    joined._db.scan(b"x Retrying (1) after connection refused; overflow\n",
                    match_event_handler=lambda *a: reports.append(a[:3]),
                    scratch=hyperscan.Scratch(joined._db))  # a database from the cache has none
    assert len(reports) == 1
    assert list(joined.scan(b"ok\nRetrying (1) after connection refused\n")) == [3]


def test_a_line_whose_keywords_fall_in_two_expressions_is_reported_once(monkeypatch):
    # Hyperscan caps an expression's length, so a big rule set's keywords of one reach are
    # joined into several expressions; they share an id, and an id reports once an offset.
    monkeypatch.setattr(finder, "JOIN_CHARS", 60)
    specs = [spec("connection refused"), spec("retrying ("), spec("overflow"), spec("attempted loss")]
    joined = finder.make_finder(specs, (), "hyperscan")
    tables = finder.HyperscanFinder.tables(
        [(t, None, keyword_gate(t, e), (b, a)) for t, e, b, a in specs], None,
        {keyword_gate(t, e) for t, e, _, _ in specs})
    assert len(tables[0]) >= 2
    import hyperscan
    reports = []
    line = b"Retrying (Retry(total=4)) after connection refused\nattempted loss scale: OVERFLOW\nok\n"
    joined._db.scan(line, match_event_handler=lambda *a: reports.append(a[:3]),
                    scratch=hyperscan.Scratch(joined._db))
    assert len(reports) == 2
    assert joined.scan(line) == {0: (2, 2), 51: (2, 2)}
