"""A cheap first test of a line against a vocabulary's gates (classifier.vocabulary).

Kept apart from the terms themselves: the vocabulary is data, this is how it is asked.
"""

import re

from classifier.precompiled import re_compile


class Hint:
    """Finds the gates of each kind of terms (success, failure, ...) in a lower-cased line: a
    cheap first test.

    `search` answers as the alternation of all the gates (`pattern`) would, but asks each
    literal with `in` and only then the few gate patterns: `re` tried every branch of the
    alternation at nearly every position (~10 us a line, a fifth of a small log's diagnosis).
    `split` also says which terms' gates the line holds, so only their patterns are searched.
    """

    __slots__ = ("pattern", "literals", "patterns", "_terms", "_joined", "_of", "_split", "_plain",
                 "_errors")

    def __init__(self, *kinds):
        terms = sum(kinds, ())
        # Ties in a fixed order: the same pattern every run (classifier.precompiled keeps it).
        literals = sorted({g for t in terms for g in t.gates}, key=lambda g: (-len(g), g))
        needs = {t.gate_pattern: t.gate_needs for t in terms if t.gate_pattern}
        patterns = sorted(needs)
        self.pattern = re_compile("|".join([re.escape(g) for g in literals] + patterns))
        # A line holding a literal that contains another holds the shorter one too. Shortest
        # first, each asked only of those kept before it (a dropped one holds a kept one): the
        # all-pairs test cost ~1.4 ms of every run's start.
        kept = []
        for g in reversed(literals):
            if not any(map(g.__contains__, kept)):
                kept.append(g)
        self.literals = tuple(kept)
        # Half of them hold `error`: asked only of a line that does (most lines do not).
        self._errors = tuple(g for g in self.literals if "error" in g)
        self._plain = tuple(g for g in self.literals if "error" not in g)
        self.patterns = tuple((re_compile(p), needs[p]) for p in patterns)
        # Which terms a found literal (or gate pattern) may open: those with a gate holding it.
        self._terms = kinds
        # A term's gates joined by NUL (in no gate): `key in joined` is `any(key in g ...)`
        # in one search. Which terms a key opens is worked out when a line first holds it
        # (_opens): a small log meets a handful of the ~100 keys.
        self._joined = tuple(tuple(("\0".join(t.gates), t.gate_pattern) for t in kind)
                             for kind in kinds)
        self._of = {}
        self._split = {}  # the keys a line holds -> the patterns of the terms they open

    def search(self, low: str) -> bool:
        """Whether `low` holds a gate (what `self.pattern.search(low) is not None` says)."""
        for literal in self.literals:
            if literal in low:
                return True
        for pattern, needs in self.patterns:
            if (not needs or any(n in low for n in needs)) and pattern.search(low) is not None:
                return True
        return False

    def gate_parts(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(literals, patterns): a lower-cased line holding none of the literals and matched
        by none of the patterns is one `split` answers None for."""
        needs = tuple(n for _, ns in self.patterns for n in ns)
        return self._plain + ("error",) + needs, tuple(p.pattern for p, ns in self.patterns if not ns)

    def split(self, low: str) -> "tuple[tuple, ...] | None":
        """None when `low` holds no gate, else the patterns of each kind (success, failure, ...): the
        terms whose gate it holds, of which any line a term matches holds one (test_vocabulary.py)."""
        keys = ()
        for literal in self._plain:
            if literal in low:
                keys += (literal,)
        if "error" in low:
            for literal in self._errors:
                if literal in low:
                    keys += (literal,)
        for pattern, needs in self.patterns:
            for n in needs:  # a loop, not any(): no generator on every line
                if n in low:
                    break
            else:
                if needs:
                    continue
            if pattern.search(low) is not None:
                keys += (pattern.pattern,)
        if not keys:
            return None
        found = self._split.get(keys)
        if found is None:
            found = self._split[keys] = tuple(
                tuple(re_compile(kind[i].pattern) for i in sorted({i for k in keys for i in self._opens(k)[n]}))
                for n, kind in enumerate(self._terms))
        return found

    def _opens(self, key: str) -> tuple:
        """For each kind, the indices of the terms with a gate holding `key` (or gated by it)."""
        found = self._of.get(key)
        if found is None:
            found = self._of[key] = tuple(tuple(i for i, (gates, pattern) in enumerate(kind)
                                                if key in gates or pattern == key)
                                          for kind in self._joined)
        return found
