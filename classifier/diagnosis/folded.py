"""A paste lower-cased as a whole (a ticket form, a chat tool, `tr A-Z a-z`) has lost every
capital the rule patterns expect (`RuntimeError`, `NCCL WARN`, `DistNetworkError`): while an
input has shown no capital letter at all, its rules' patterns are tried ignoring case.

Keywords are matched ignoring case already. Rules with `exact_case: true` keep their case: the
capitals are what tells their line from chatter; so do rules whose patterns all start `(?i)`. One capital anywhere before turns it off for
the rest of the input, so an ordinary log (its first `INFO`, `Traceback`, `NCCL`) never folds.
"""

from classifier.precompiled import re_compile
from classifier.rules import regexcode

_UPPER = re_compile(r"[A-Z]")
_FOLDED: dict = {}  # pattern -> the same pattern ignoring case (one per rule pattern)


def has_capital(text: str) -> bool:
    """Does `text` hold an ASCII capital letter?"""
    return _UPPER.search(text) is not None


def folds(rule) -> bool:
    """Are `rule`'s patterns tried ignoring case in a lower-cased paste? Not where its keywords
    keep their case, nor where every pattern already ignores case (its author chose then what
    its `exclude` patterns tell apart by case: a retyped message from the exact wording)."""
    return not rule.exact_case and not all(p.pattern.startswith("(?i)") for p in rule.patterns)


def folded(pattern):
    """`pattern`, compiled to match ignoring case (once per pattern)."""
    got = _FOLDED.get(pattern)
    if got is None:
        got = _FOLDED[pattern] = regexcode.compile("(?i)" + pattern.pattern)
    return got


class FoldedBudget:
    """A RegexBudget whose searches ignore case; everything else is the budget's own."""

    folded = True

    def __init__(self, budget) -> None:
        self._budget = budget

    def search(self, pattern, text: str, trusted: bool = False, **kwargs):
        """The budget's search with `pattern` ignoring case."""
        return self._budget.search(folded(pattern), text, trusted, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._budget, name)
