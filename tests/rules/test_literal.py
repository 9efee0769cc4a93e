"""The literal a pattern requires (classifier.rules.literal) is in every text it matches."""

import pytest

from classifier.rules.literal import CASELESS, required_literal
from classifier.rules.load import default_rules


@pytest.mark.parametrize("pattern,literal", [
    (r"(?P<lib>libaio\.so(?:\.\d+)*):\s+cannot open shared object file", "cannot open shared object file"),
    (r"failed\s+\(exitcode:\s*-9\)", "(exitcode:"),
    (r"Signal\s+9\s+\(SIGKILL\)", "(SIGKILL)"),
    (r"a{2,3}bcdef", "bcdef"),          # a quantified character leaves the run
    (r"xyz?abcd", "abcd"),
    (r"ab+cdefg", "cdefg"),
    (r"(?i)Exit\s+Code", CASELESS + "exit"),   # case-insensitive: lower-cased and marked
    (r"(?i)exit(?x) code", None),        # a further flag inside: not read
    (r"(?i)\u00e9t\u00e9s", None),          # a run with an escape code: not read as text
    (r"(?i)(?P<x>\d+)\s+EXITED\s+", CASELESS + "exited"),
    (r"(?x) a b c d e", None),           # verbose: not read
    (r"abcde|fghij", None),              # a top-level alternation: no literal is required
    (r"(?:abcde|fghij)xy", None),        # inside a group: not read
    (r"[[:alpha:]]xyzw", None),          # POSIX classes: not read
    (r"[abc]defgh", "defgh"),
    (r"[]x]defgh", "defgh"),
    (r"\{'loss'", "{'loss'"),
    (r"abc", None),                      # under MIN_LITERAL
])
def test_required_literal(pattern, literal):
    assert required_literal(pattern) == literal


def test_every_builtin_pattern_match_holds_its_literal():
    checked = 0
    for rule in default_rules().rules:
        texts = [t if isinstance(t, str) else t.get("text", "")
                 for t in (rule.examples.get("match") or []) + (rule.examples.get("no_match") or [])]
        for pattern, literal in zip(rule.patterns, rule.required):
            if literal is None:
                continue
            for text in texts:
                for line_window in (text, " ".join(text.splitlines())):
                    m = pattern.search(line_window)
                    if m:
                        checked += 1
                        if literal.startswith(CASELESS):
                            assert literal[1:] in m.group().lower(), (rule.id, pattern.pattern, literal)
                        else:
                            assert literal in m.group(), (rule.id, pattern.pattern, literal)
    assert checked > 300
