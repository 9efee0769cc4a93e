"""Run the examples that rule files carry: the test suite and `dsdiag rules test` share this."""

from classifier.diagnosis.match import scan
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine


def hits_for_text(text, rules):
    """Return all hits the rule set finds in a snippet of log text."""
    raw = (RawLine("<example>", i, t) for i, t in enumerate(text.splitlines(), 1))
    return list(scan(normalize(raw), rules.keyword_index()))


def example_cases(rules):
    """Yield (test_id, rule, kind, text, expected_facts) for every example of every rule."""
    for rule in rules.rules:
        for kind in ("match", "no_match"):
            for i, item in enumerate(rule.examples.get(kind) or ()):
                text, facts = (item, {}) if isinstance(item, str) else (item["text"], item.get("facts") or {})
                yield f"{rule.id}-{kind}-{i}", rule, kind, text, facts


def check_example(rule, kind, text, facts, rules):
    """Return None if the example behaves, else a one-line reason."""
    hits = [h for h in hits_for_text(text, rules) if h.rule.id == rule.id]
    if kind == "match":
        if not hits:
            return f"{rule.id}: must match but did not: {text[:200]!r}"
        for key, want in facts.items():
            got = [h.facts.get(key) for h in hits]
            if str(want) not in [str(g) for g in got]:
                return f"{rule.id}: fact {key}: want {want!r}, got {got!r}"
        return None
    if hits:
        return f"{rule.id}: must not match but did on line {hits[0].first.lineno}: {text[:200]!r}"
    return None
