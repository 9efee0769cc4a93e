"""Stage 3's inner loop: a rule's patterns on the windows of lines around one keyword line.

A pattern is tried on the keyword line alone, then on short windows of neighbouring lines
joined by a space (a message a logger or terminal hard-wrapped still matches). A pattern whose
required literal (classifier.rules.literal) is absent from the lines around is not searched.
"""

from classifier.diagnosis.budget import UNTIMED_TEXT, _monotonic
from classifier.diagnosis.hit import match_start
from classifier.rules.literal import CASELESS

# Window shapes around the keyword line i, as (first, last) offsets, tried in order.
_WINDOWS = ((0, 0), (0, 1), (0, 2), (-1, 0), (-1, 1), (-2, 0))


class Views:
    """The texts a keyword line's rules are tried on, joined once for all of them (a keyword
    line gates ~4 rules): the five lines around it, then each window of _WINDOWS."""

    __slots__ = ("buf", "i", "_around", "_windows", "_lower")

    def __init__(self, buf, i):
        self.buf, self.i, self._around, self._windows, self._lower = buf, i, None, None, False

    @property
    def around_lower(self) -> str | None:
        """`around` lower-cased, or None when it is not ASCII (lower() may change its length)."""
        if self._lower is False:
            around = self.around
            self._lower = around.lower() if around.isascii() else None
        return self._lower

    @property
    def around(self) -> str:
        if self._around is None:
            buf, i = self.buf, self.i
            self._around = " ".join(buf[k].msg for k in range(max(0, i - 2), min(len(buf), i + 3)))
        return self._around

    @property
    def windows(self) -> list:
        if self._windows is None:
            buf, i, n = self.buf, self.i, len(self.buf)
            self._windows = []
            for lo, hi in _WINDOWS:
                a, b = i + lo, i + hi
                if a >= 0 and b < n:
                    lines = [buf[k] for k in range(a, b + 1)]
                    self._windows.append((lines, " ".join(line.msg for line in lines)))
        return self._windows


_CASELESS_OF: dict = {}


def _caseless(required) -> list:
    """(index, lower-cased literal) of the `(?i)` patterns among a rule's required literals."""
    entry = _CASELESS_OF.get(id(required))
    if entry is None or entry[0] is not required:
        entry = _CASELESS_OF[id(required)] = (required, [
            (j, literal[1:]) for j, literal in enumerate(required) if literal and literal[0] == CASELESS])
    return entry[1]


def window_match(rule, buf, i, budget, views=None):
    """Try the rule's patterns on windows around buf[i]; return (lines, match, text) or None.

    Patterns are the outer loop: a rule lists its richest pattern first, and that pattern
    gets every window before a shorter fallback may match the single line. `views`: the
    line's Views, shared by its rules.
    """
    budget.start(buf[i])  # this line's searches, its exclusions and context share one budget
    if views is None:
        views = Views(buf, i)
    required = rule.required
    if any(required):
        # Every window is a substring of these lines joined: a pattern whose required literal
        # is not in them cannot match one, and is not searched.
        around = views.around
        if getattr(budget, "folded", False):  # a lower-cased paste: its literals are too
            required = [None if literal is None else literal.lower() for literal in required]
        # Only the patterns asked are compiled (Rule.pattern): most keyword lines rule out
        # most of their rules' patterns here, and a compile costs more than the test.
        asked = [(j, literal) for j, literal in enumerate(required)
                 if literal is None or literal in around]
        caseless = _caseless(required)
        if caseless:
            # a `(?i)` pattern's literal is tested on the lower-cased lines, not per window
            lower = views.around_lower
            asked = sorted(asked + [(j, None) for j, literal in caseless
                                    if lower is None or literal in lower])
        if not asked:
            return None
    else:
        asked = [(j, None) for j in range(len(required))]
    windows = views.windows
    # A built-in rule's patterns on short windows go without a clock per search (about as much
    # time as the search): the rule's searches on this line are timed once, together, and a
    # line or job whose budget is spent takes the budget's own path, which says so.
    direct = (rule.builtin and budget.line_left > 0 and budget.job_left > 0
              and not getattr(budget, "folded", False))
    started = _monotonic() if direct else 0.0
    try:
        return _first_window(rule, asked, windows, budget, direct)
    finally:
        if direct:
            budget.charge(_monotonic() - started)


def _first_window(rule, asked, windows, budget, direct):
    for j, literal in asked:
        pattern = rule.pattern(j)
        for lines, text in windows:
            # the same test per window: a window without the literal cannot match
            if literal is not None and literal not in text:
                continue
            if direct and len(text) <= UNTIMED_TEXT:
                m = pattern.search(text)
            else:
                m = budget.search(pattern, text, rule.builtin)
            if m is None:
                continue
            # Which of the joined lines does the match span?
            starts, pos = [], 0
            for line in lines:
                starts.append(pos)
                pos += len(line.msg) + 1
            start = match_start(m)
            first = max(k for k, s in enumerate(starts) if s <= start)
            last = max(k for k, s in enumerate(starts) if s <= max(m.end() - 1, start))
            return lines[first:last + 1], m, text
    return None
