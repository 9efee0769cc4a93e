"""The lines around an exception, for the vetoes of rules that fire on structure alone.

A line rule's `exclude`, `not_near` and `not_after` are read in the matcher's window as the line
goes by. A rule with a `structure:` block and no patterns fires only once the whole job has
been read, on an exception's frames, when that window is gone; so while such a rule with a
veto is loaded the job's last RECENT_LINES lines are kept, and its vetoes read the same lines a
line rule's would: the exception's anchor (`exclude`), up to CONTEXT_LINES lines before it
(`not_after`) and the NEAR_AFTER lines after it as well (`not_near`). An anchor that has left
the ring (thousands of lines before the end) is judged on its own line alone.
"""

from collections import deque

from classifier.diagnosis.hit import CONTEXT_LINES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from classifier.diagnosis.budget import RegexBudget
    from classifier.diagnosis.normalize import Line
    from classifier.diagnosis.traceback import Raised
    from classifier.rules.model import Rule

RECENT_LINES = 4096  # lines kept, over all inputs: bounded memory whatever the job's size
NEAR_AFTER = 2       # lines after a hit a `not_near` pattern is read on, as for a line rule


class RecentLines:
    """The job's last RECENT_LINES normalised lines, in the order they were read."""

    def __init__(self) -> None:
        self._lines: deque = deque(maxlen=RECENT_LINES)
        self.feed = self._lines.append

    def around(self, anchor: "Line") -> tuple[list, list]:
        """(up to CONTEXT_LINES lines of `anchor`'s input before it, up to NEAR_AFTER after it)."""
        before, after, found = [], [], False
        for line in self._lines:
            if line.source != anchor.source:
                continue
            if line.lineno < anchor.lineno:
                before.append(line)
            elif line.lineno > anchor.lineno and found and len(after) < NEAR_AFTER:
                after.append(line)
            elif line.lineno == anchor.lineno:
                found = True
        return (before[-CONTEXT_LINES:], after) if found else ([], [])


def _search(pattern, text: str, rule: "Rule", budget: "RegexBudget | None") -> bool:
    if budget is None:  # a rule's examples are checked without a job's regex budget
        return pattern.search(text) is not None
    return budget.search(pattern, text, rule.builtin) is not None


def vetoed(rule: "Rule", raised: "Raised", recent: RecentLines | None,
           budget: "RegexBudget | None" = None) -> bool:
    """Does an `exclude`, `not_near` or `not_after` of a structure-only rule rule out its hit
    on `raised`?"""
    anchor = raised.anchor
    if budget is not None:
        budget.start(anchor)
    own = [anchor.msg] if raised.line is None or raised.line is anchor else [anchor.msg, raised.line.msg]
    if any(_search(p, text, rule, budget) for p in rule.exclude for text in own):
        return True
    before, after = recent.around(anchor) if recent is not None else ([], [])
    if rule.not_after and any(_search(p, line.msg, rule, budget) for p in rule.not_after for line in before):
        return True
    return bool(rule.not_near) and any(_search(p, text, rule, budget) for p in rule.not_near
                                       for text in [line.msg for line in before + after] + own)
