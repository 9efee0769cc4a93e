"""The prefilter's Hyperscan tables kept in the cache (finder.make_finder with a version): a
finder built from them selects exactly the lines of one built from the rules."""

import pytest

from classifier.diagnosis import finder
from classifier.rules.load import default_rules
from classifier.vocabulary import ALL_TERMS
from conftest import ROOT

pytest.importorskip("hyperscan")


def test_cached_tables_select_the_same_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    rules = default_rules()
    built = finder.make_finder(rules._select_keywords, ALL_TERMS, "hyperscan", rules.version)
    assert list(tmp_path.glob("finder-*.marshal"))  # kept
    cached = finder.make_finder(lambda: pytest.fail("built again"), ALL_TERMS, "hyperscan",
                                rules.version)
    plain = finder.make_finder(rules._select_keywords(), ALL_TERMS, "hyperscan")
    chunk = b"".join(p.read_bytes() for p in sorted((ROOT / "corpus").rglob("*.log"))[::40])
    assert cached.scan(chunk) == built.scan(chunk) == plain.scan(chunk)
    assert len(cached.scan(chunk)) > 100


def test_tables_key_follows_the_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("DSDIAG_CACHE_DIR", str(tmp_path))
    assert finder._tables_key("sha256:aaaaaaaaaaaa") != finder._tables_key("sha256:bbbbbbbbbbbb")
