"""Run the examples that rule files carry: the test suite and `dsdiag rules test` share this."""

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from classifier.diagnosis.match import scan
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine
from classifier.diagnosis.structure import DeferredHits

if TYPE_CHECKING:
    from classifier.diagnosis.match import Hit
    from classifier.rules.model import Rule, RuleSet


def hits_for_text(text: str, rules: "RuleSet") -> list["Hit"]:
    """Return all hits the rule set finds in a snippet of log text, as a job would."""
    raw = (RawLine("<example>", i, t) for i, t in enumerate(text.splitlines(), 1))
    deferred = DeferredHits(rules.rules)
    last = {"<example>": len(text.splitlines())}
    index = rules.keyword_index()
    hits = [h for h in scan(normalize(raw), index, deferred.feed) if not deferred.offer(h)]
    return hits + deferred.resolve(rules.rules, last, hits, index)


def example_cases(rules: "RuleSet") -> Iterator[tuple[str, "Rule", str, str, dict[str, Any]]]:
    """Yield (test_id, rule, kind, text, expected_facts) for every example of every rule."""
    for rule in rules.rules:
        for kind in ("match", "no_match"):
            for i, item in enumerate(rule.examples.get(kind) or ()):
                text, facts = (item, {}) if isinstance(item, str) else (item["text"], item.get("facts") or {})
                yield f"{rule.id}-{kind}-{i}", rule, kind, text, facts


def check_example(rule: "Rule", kind: str, text: str, facts: dict[str, Any],
                  rules: "RuleSet") -> str | None:
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
