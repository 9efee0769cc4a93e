"""Stage 3: find rule hits in a stream of normalised lines.

Literal keywords gate the regexes: every keyword a line holds is found in one pass
(finder.KeywordSubstrings), and a rule's patterns run only where one of its keywords occurs. A pattern is tried on the line
alone, then on short windows of neighbouring lines joined by a space, so a message that a
logger or terminal hard-wrapped still matches.
"""

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from classifier.precompiled import re_compile
from classifier.diagnosis.budget import RegexBudget
from classifier.diagnosis.folded import FoldedBudget, folds, has_capital
from classifier.diagnosis.gates import bounded, keyword_gate, trie_regex  # noqa: F401 (read from here too)
from classifier.diagnosis.hit import (  # noqa: F401 (Hit, CONTEXT_LINES, MIN_CUT: read from here too)
    CONTEXT_LINES, MIN_CUT, MIN_CUT_KEYWORD, _CODE_LINE, Hit, _excluded, _has_context, _near, _after_echo, is_code,
    is_key_message, match_start)
from classifier.diagnosis.window import Views, window_match

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line
    from classifier.diagnosis.read import Warnings
    from classifier.rules.model import Rule

SEEN_LIMIT = 4096  # hit keys kept before those of lines the buffer has passed are dropped
_AHEAD = 2
_LONE_QUOTED = re_compile(r"""(["'])([^"'\n]{8,400})\1[.,]?""")
_KEPT, _KEPT_BELOW = 4096, 512  # keyword answers kept, for messages shorter than this



class KeywordIndex:
    """Maps the keywords found in a line to the rules they gate."""

    def __init__(self, rules: Iterable["Rule"], engine: str = "auto") -> None:
        # "auto": Hyperscan once a run has asked enough lines, where its wheel is installed;
        # "re": Python only; "hyperscan": from the first line (finder.KeywordSubstrings).
        self._engine = engine
        # A keyword is (text, exact case): lower-cased text unless its rule says exact_case.
        # Built on every run (~1,900 keywords): plain loops and key=len sorts, no lambdas.
        rules_of = self._rules_of = {}
        for rule in rules:
            exact = rule.exact_case
            for kw in rule.keywords:
                found = rules_of.get((kw, exact))
                if found is None:
                    rules_of[(kw, exact)] = [rule]
                else:
                    found.append(rule)
        # Compiled on first use (an ordinary log meets a handful of the ~500 keywords).
        self._bounded = {}
        lows = sorted({text.lower() for text, _ in rules_of})
        lows.sort(key=len, reverse=True)  # longest first, then alphabetical (the sort is stable)
        # Each keyword found also asks every keyword inside it, longest first (_inside()): the
        # order keywords are asked in is the order of the rules a line returns.
        texts = list(rules_of)
        lengths = [len(text) for text, _ in texts]
        order = sorted(range(len(texts)), key=lengths.__getitem__, reverse=True)  # ties: rule order
        self._keys = [texts[i] for i in order]
        self._order = {key: i for i, key in enumerate(self._keys)}
        self._inside_of = {}
        self._key_lows = None  # first two letters -> [(position in _keys, keyword)], see _inside()
        self._short_keys = ()
        self._lows = lows
        self._finder = None  # built on the first line: see _substrings()
        self._cut_prefixes = None  # built on first use: only an input's last line asks
        self._longest_cut = 0
        # A pure function of the message, asked of every line: the answer for a short message
        # is kept for its next copies (ranks and jobs repeat their chatter).
        self._kept = {}

    def rules_cut_at_end(self, msg: str) -> list["Rule"]:
        """Rules with a keyword in `msg`, or whose keyword begins where `msg` is cut off."""
        low = msg.lower()
        out = list(self.rules_for(msg))
        if self._cut_prefixes is None:
            # Every proper prefix a keyword may be cut to (lower-cased), and the keywords it begins.
            self._cut_prefixes = {}
            for key in self._rules_of:
                text = key[0]
                for n in range(min(MIN_CUT_KEYWORD, len(text)), len(text)):
                    self._cut_prefixes.setdefault(text[:n].lower(), []).append(key)
            self._longest_cut = max(map(len, self._cut_prefixes), default=0)
        longest = self._longest_cut
        cut = set()
        for n in range(1, min(longest, len(low)) + 1):
            for text, exact in self._cut_prefixes.get(low[-n:], ()):
                if len(low) != len(msg) or re.compile(bounded(text[:n], exact)).match(msg, len(msg) - n):
                    cut.add((text, exact))
        for key in sorted(cut, key=self._order.__getitem__):
            out.extend(r for r in self._rules_of[key] if r not in out)
        return out

    def rules_for(self, msg: str) -> Sequence["Rule"]:
        """Return the rules whose keywords occur in `msg` where a word starts (do not modify)."""
        if len(msg) >= _KEPT_BELOW:
            return self._rules_for(msg)
        kept = self._kept
        found = kept.get(msg)
        if found is None:
            if len(kept) >= _KEPT:
                kept.clear()
            found = kept[msg] = self._rules_for(msg)
        return found

    def _rules_for(self, msg: str) -> Sequence["Rule"]:
        low = msg.lower()
        finder = self._finder
        found = finder(low) if finder is not None else self._substrings(low)
        if not found:
            return ()
        out, asked = [], set()
        ascii = msg.isascii()
        for found in found:
            for key in self._inside(found):
                if key not in asked:
                    asked.add(key)
                    # In ASCII text a keyword can start no earlier than its first lower-cased
                    # occurrence: search from there, not from every character of a long line
                    # (the word-start look-behinds cost ~0.1 us a character).
                    start = low.find(key[0].lower()) if ascii and key[0].isascii() else 0
                    if start >= 0 and self._word_start(key).search(msg, start):
                        out.extend(r for r in self._rules_of[key] if r not in out)
        return out

    @property
    def hyperscan_loaded(self) -> bool:
        """Whether the keyword finder answers with Hyperscan now (so it is imported)."""
        return self._finder is not None and self._finder.name == "hyperscan"

    def prepare(self) -> None:
        """Build the keyword finder and load what it will use now (see KeywordSubstrings.load_now)."""
        self._substrings("")
        self._finder.load_now()

    def _substrings(self, low: str) -> Sequence[str]:
        """The keywords in the lower-cased line, anywhere, by where they start, the longest first.

        A keyword still counts only where bounded() finds it in the line as written.
        """
        if self._finder is None:
            from classifier.diagnosis.finder import KeywordSubstrings
            self._finder = KeywordSubstrings(self._lows, self._engine)
        return self._finder(low)

    def _inside(self, found: str) -> list:
        keys = self._inside_of.get(found)
        if keys is None:
            by_start = self._key_lows
            if by_start is None:
                # The keywords by their first two letters (lower-cased, built once): a keyword
                # inside `found` starts at one of its positions, so each position asks only the
                # few keywords that begin with its two letters, not all ~1,900.
                by_start, short = {}, []
                for i, key in enumerate(self._keys):
                    low = key[0].lower()
                    if len(low) < 2:
                        short.append((i, low))
                    else:
                        by_start.setdefault(low[:2], []).append((i, low))
                self._key_lows = by_start
                self._short_keys = short
            hit = [i for i, low in self._short_keys if low in found]
            for p in range(len(found) - 1):
                for i, low in by_start.get(found[p:p + 2], ()):
                    if found.startswith(low, p):
                        hit.append(i)
            keys = self._inside_of[found] = [self._keys[i] for i in sorted(set(hit))]  # _keys' order
        return keys

    def _word_start(self, key: tuple) -> "re.Pattern":
        pattern = self._bounded.get(key)
        if pattern is None:
            pattern = self._bounded[key] = re_compile(bounded(*key))
        return pattern


def _cut(buf, i, cut, index, seen, budget):
    """The hits on buf[i] as a message cut where the line stops, when it is one of `cut`."""
    if (buf[i].source, buf[i].lineno) not in cut:
        return ()
    from classifier.diagnosis.cutend import cut_at_end
    return list(cut_at_end(buf, i, index, seen, budget))


def scan(lines: Iterable["Line"], index: KeywordIndex,
         on_line: Callable[["Line"], None] | None = None,
         warnings: "Warnings | None" = None, budget: RegexBudget | None = None,
         cut: set | None = None, declined: set | None = None) -> Iterator[Hit]:
    """Yield Hits for an iterable of Lines of one input; `on_line` sees every line once; a
    line in `cut` ((source, lineno): its rest was lost) is read as a paste's cut last line.
    `declined` gets the category of each rule whose words matched but whose `exclude` or
    `not_near` ruled it out (the fallback model may not answer it).

    `budget` bounds the regex time (classifier/diagnosis/budget.py): pass one per job.
    """
    budget = budget if budget is not None else RegexBudget(warnings)
    buf = deque()
    seen = set()
    keep = CONTEXT_LINES + 1 + _AHEAD

    def process(i, lone=False):
        # A list, not a generator: most lines hold no keyword, and a generator per line cost
        # more than its test. The keyword lookup comes first for the same reason (both pure).
        line = buf[i]
        rules = index.rules_for(line.msg)
        if not rules:
            return ()
        if not lone and is_code(buf, i):
            # a source line: only the rules written to read one (`reads_code`) try it
            rules = [rule for rule in rules if rule.reads_code]
            if not rules:
                return ()
        hits = []
        views = Views(buf, i)
        for rule in rules:
            searcher = budget if capital_seen or not folds(rule) else folded_budget
            found = window_match(rule, buf, i, searcher, views)
            if found is None:
                continue
            span, m, text = found
            if span[0] is not line and _CODE_LINE.match(span[0].msg) and not is_key_message(span) \
                    and not rule.reads_code:
                continue
            key = (rule.id, span[0].source, span[0].lineno)
            if key in seen:
                continue
            if rule.exclude and _excluded(rule, text, searcher):
                if declined is not None:
                    declined.add(rule.category)
                continue
            if rule.context and not _has_context(rule, buf, i, searcher):
                continue
            if rule.not_near and _near(rule, buf, i, searcher):
                if declined is not None:
                    declined.add(rule.category)
                continue
            if rule.not_after and _after_echo(rule, buf, i, searcher):
                if declined is not None:
                    declined.add(rule.category)
                continue
            seen.add(key)
            facts = {k: v.strip() for k, v in m.groupdict().items() if v and v.strip()}
            hits.append(Hit(rule, span, facts))
        return hits

    folded_budget = FoldedBudget(budget)
    capital_seen = False  # no capital letter in this input yet: patterns ignore case
    last = None
    count = 0
    for line in lines:
        if on_line is not None:
            on_line(line)
        if not capital_seen and has_capital(line.msg):
            capital_seen = True
        if last is not None and line.lineno != last.lineno + 1:
            # The prefilter skipped lines here: finish the old stretch, never join across.
            for i in range(max(0, len(buf) - _AHEAD), len(buf)):
                yield from process(i) or (_cut(buf, i, cut, index, seen, budget) if cut else ())
            buf.clear()
        last = line
        if not line.msg:
            # A blank is no message: windows reach over it to the next one, as over the
            # numbers a wrapped line's rejoined pieces leave blank (paste.py).
            continue
        buf.append(line)
        count += 1
        if len(buf) > keep:
            buf.popleft()
        if len(seen) > SEEN_LIMIT:
            # A hit starts within the buffer (a window reaches back two lines from a line in
            # it), so a key of a line older than the buffer never comes back: a storm of hits
            # keeps a few keys, not one per line (the set grew ~100 bytes a hit line).
            oldest = buf[0].lineno
            seen.difference_update([key for key in seen if key[2] < oldest])
        i = len(buf) - 1 - _AHEAD
        if i >= 0:
            hits = process(i) or (_cut(buf, i, cut, index, seen, budget) if cut else ())
            if hits:
                yield from hits
    # Drain: the last lines have no lookahead left. A paste that is one quoted message and
    # nothing else (`"No space left on device"`, a reporter quoting what the tool printed) is
    # that message: a source line's string has code around it, or is indented as code (a single
    # space before the quote is the reporter's prose spacing, not an indent). Two ranks' copies
    # of it, one under the other, are still that one message. A gap the prefilter left clears
    # the buffer, so every message line must still be in it (and it may be empty).
    lone = (0 < count == len(buf) <= 2 and buf[0].lineno <= 3 and all(line.msg == buf[0].msg for line in buf)
            and not buf[0].text.startswith(("  ", "\t"))
            and _LONE_QUOTED.fullmatch(buf[0].msg) is not None)
    for i in range(max(0, len(buf) - _AHEAD), len(buf)):
        found = process(i, lone)
        if lone and not found:
            # Then without its quotes: a rule that refuses a quoted copy of its text (a source
            # line's string) must still read what the reporter quoted.
            from classifier.diagnosis.normalize import Line  # loaded already: the readers made buf
            line = buf[i]
            buf[i] = Line(line.source, line.lineno, line.text, _LONE_QUOTED.fullmatch(line.msg).group(2),
                          line.rank, line.host, line.ts, line.index, line.task)
            found = process(i, lone)
        yield from found or (_cut(buf, i, cut, index, seen, budget) if cut else ())
    # The last line with a message: a paste often ends in a bare label (`[rank3]:`, `> `).
    at = next((i for i in range(len(buf) - 1, -1, -1) if buf[i].msg), None)
    if at is not None:
        from classifier.diagnosis.cutend import cut_at_end  # only a paste that ends mid-line needs it
        yield from cut_at_end(buf, at, index, seen, budget)
