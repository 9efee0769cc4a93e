"""The prefilter's line finders: which lines of a chunk hold a rule keyword or a failure marker;
and the matcher's keyword finder, which keywords a line holds (KeywordSubstrings).

Both engines select exactly the same lines: Hyperscan, which matches every gate in one pass
(its compiled database cached between runs), and a pure-Python trie of literal hints whose
lines are then checked against each gate. Each line found carries its reach: how many lines
before and after it the readers downstream may look at.
"""

import os
from collections.abc import Callable, Iterable, Sequence

from classifier.diagnosis.hsdb import load_database
from classifier.diagnosis.gates import hint_literal, keyword_gate, trie_regex
from classifier.diagnosis.hit import CONTEXT_LINES
from classifier.vocabulary import ROOT_FIELD_LINES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.term import Term

NEAR = 2                     # a match window reaches two lines back
BEFORE = CONTEXT_LINES + NEAR  # ... and a rule with `context` looks 50 lines further back
AFTER = max(10, ROOT_FIELD_LINES)  # after a failure marker: its message, chain, root-cause fields

Reach = tuple[int, int]  # lines a selected line brings before and after it
# (literal hint, hint pattern, gate, reach): what a finder looks for, and how much around a
# line it finds the readers downstream may look at.
Gate = tuple[str | None, str | None, str, Reach]


def _widest(a: Reach | None, b: Reach) -> Reach:
    return b if a is None else (max(a[0], b[0]), max(a[1], b[1]))


class PurePythonFinder:
    """Line starts of lines a gate matches: a trie of literals, then each gate it points to."""

    name = "re"
    parallel = False  # `re` holds the GIL: threads would only take turns

    def __init__(self, gates: Iterable[Gate]) -> None:
        import re
        # The hints (a literal, or a pattern) are cheap and case-insensitive, and every line
        # a gate matches holds its hint; the gate then decides.
        by_literal, self._patterns = {}, []
        for literal, pattern, gate, reach in gates:
            compiled = (re.compile(gate.encode("utf-8"), re.M), reach)
            if literal is not None:
                by_literal.setdefault(literal.encode("utf-8"), []).append(compiled)
            else:
                self._patterns.append((re.compile(pattern.encode("utf-8")), compiled))
        # The trie finds one literal at a place, the longest: a literal found there also stands
        # for the shorter ones it begins with (`error: ` for `error`), whose gates must be asked.
        self._gates = {lit: [g for other, gs in by_literal.items() if lit.startswith(other) for g in gs]
                       for lit in by_literal}
        trie = trie_regex(sorted(lit.decode("utf-8") for lit in by_literal)).encode("utf-8")
        hints = [trie] + [p.pattern for p, _ in self._patterns]
        self._hint = re.compile(b"|".join(hints))
        self._literals = re.compile(b"(?=(" + trie + b"))")

    def _reach(self, line: bytes, low: bytes) -> Reach | None:
        found = [g for literal in dict.fromkeys(self._literals.findall(low))
                 for g in self._gates[literal]]
        found += [g for p, g in self._patterns if p.search(low)]
        reach = None
        for gate, gate_reach in found:
            if reach != _widest(reach, gate_reach) and gate.search(line):
                reach = _widest(reach, gate_reach)
        return reach

    def scan(self, chunk: bytes) -> dict[int, Reach]:
        """The starts of the lines in `chunk` a gate matches, in order, with their reach."""
        low = chunk.lower()
        out, last = {}, -1
        for m in self._hint.finditer(low):
            start = low.rfind(b"\n", 0, m.start()) + 1
            if start == last:
                continue
            last = start
            end = low.find(b"\n", m.end())
            end = len(low) if end < 0 else end
            reach = self._reach(chunk[start:end], low[start:end])
            if reach is not None:
                out[start] = reach
        return out

    def line_starts(self, chunk: bytes) -> list[int]:
        """Sorted offsets of the starts of lines in `chunk` that a gate matches."""
        return list(self.scan(chunk))


JOIN_CHARS = 15_000  # of keyword gates an expression joins (HyperscanFinder.tables)


def _on_match(gate_id, _from, to, _flags, found):
    found.append((to, gate_id))


class HyperscanFinder:
    """The same line starts, from Hyperscan's matcher (every gate in one pass).

    A gate with scan forms (`scans`: Term.scan) is looked for by those instead, and a line
    one of them finds is selected only if the gate itself matches it (`re`, as in the
    pure-Python finder): a gate with no literal to start from costs Hyperscan an automaton
    over every byte, about as much as all the other gates together.
    """

    name = "hyperscan"
    parallel = True

    def __init__(self, gates: Iterable[Gate] = (), scans: dict[str, Sequence[str]] | None = None,
                 tables: tuple | None = None) -> None:
        import re
        import threading  # here, not at the top: a small log never needs it (~1 ms a start)

        import hyperscan
        expressions, reach, checks = tables or self.tables(gates, scans)
        # By expression id: its reach, and the gate to check on its lines (None: itself).
        compiled = {gate: re.compile(gate.encode("utf-8"), re.M) for gate in set(checks) if gate}
        self._reach = [tuple(r) for r in reach]
        self._check = [compiled.get(gate) for gate in checks]
        # Expressions with no gate to check and the same reach report under one id: Hyperscan
        # reports an id once at an offset, so a line that two of them find (joined keywords
        # run to its end) costs one Python call, not two (the keyword-dense log: half its calls).
        first: dict[tuple, int] = {}
        ids = [first.setdefault(tuple(r), i) if c is None else i for i, (r, c) in enumerate(zip(reach, checks))]
        self._db = load_database([e.encode("utf-8") for e in expressions], hyperscan.HS_FLAG_MULTILINE,
                                 "hyperscan", ids)
        self._scratch = threading.local()  # a scan's scratch space is its thread's own
        self._new_scratch = lambda: hyperscan.Scratch(self._db)

    @staticmethod
    def tables(gates: Iterable[Gate], scans: dict[str, Sequence[str]] | None,
               keyword_gates: "set[str] | frozenset[str]" = frozenset()) -> tuple:
        """(expressions, their reach, the gate each must check or None): what a finder is
        built from, plain data that the cache keeps (make_finder).

        `keyword_gates` (match.keyword_gate's, which end in their keyword) are joined, by
        reach, into expressions that run on to the end of the line: Hyperscan reports one
        match per expression and end, so a line with several keywords costs one report
        where it cost one each, and each report is a Python call that waits for the GIL
        (the keyword-dense log: two a line)."""
        reach = {}
        for _, _, gate, gate_reach in gates:
            reach[gate] = _widest(reach.get(gate), gate_reach)
        expressions, reaches, checks = [], [], []
        joined: dict[Reach, list[str]] = {}
        for gate, gate_reach in reach.items():
            forms = (scans or {}).get(gate)
            if not forms and gate in keyword_gates and "\n" not in gate:
                joined.setdefault(gate_reach, []).append(gate)
                continue
            for form in forms or (gate,):
                expressions.append(form)
                reaches.append(gate_reach)
                checks.append(gate if forms else None)
        for gate_reach, group in joined.items():
            # Hyperscan limits an expression's length (16,000 characters).
            parts, size = [[]], 0
            for gate in group:
                if size + len(gate) > JOIN_CHARS and parts[-1]:
                    parts.append([])
                    size = 0
                parts[-1].append(f"(?:{gate})")
                size += len(gate) + 5
            for part in parts:
                expressions.append(f"(?:{'|'.join(part)})[^\\n]*$")
                reaches.append(gate_reach)
                checks.append(None)
        return expressions, reaches, checks

    def scan(self, chunk: bytes) -> dict[int, Reach]:
        """The starts of the lines in `chunk` a gate matches, in order, with their reach."""
        found = []
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            scratch = self._scratch.space = self._new_scratch()
        self._db.scan(chunk, match_event_handler=_on_match, context=found, scratch=scratch)
        out, rfind, find, reach, checks = {}, chunk.rfind, chunk.find, self._reach, self._check
        checked = {}  # (line start, gate) -> whether the gate matches the line
        start, end = 0, -1  # the line of the match before: its start and its newline
        for to, gate_id in found:
            # A gate may end on the newline after its line (`[^A-Za-z0-9]`): look before it.
            # Matches come by their end, so most share the line of the one before.
            if not start <= to - 1 <= end:
                start = rfind(b"\n", 0, to - 1) + 1
                end = find(b"\n", start)
                end = len(chunk) if end < 0 else end
            check = checks[gate_id]
            if check is not None:
                ok = checked.get((start, check))
                if ok is None:
                    ok = checked[start, check] = check.search(chunk, start, end) is not None
                if not ok:
                    continue
            gate_reach = reach[gate_id]
            before = out.get(start)
            out[start] = gate_reach if before is None or before == gate_reach else _widest(before, gate_reach)
        return dict(sorted(out.items()))

    def line_starts(self, chunk: bytes) -> list[int]:
        """Sorted offsets of the starts of lines in `chunk` that a gate matches."""
        return list(self.scan(chunk))


GRAM = 4  # characters of a keyword's start that the pure-Python substring finder looks up
# Lines a KeywordIndex answers in Python before it loads Hyperscan ("auto"): importing the
# wheel (a 6.5 MB library) and loading its database cost ~5 ms of CPU, about what ~500 lines
# cost more in Python (~10 us a line against ~2 us), so a small log never pays for it.
HYPERSCAN_AFTER = 500
_SLICES: list[slice] = []  # _SLICES[i]: the GRAM characters from i, reused by every line
_MAX_SLICES = 8192


def _hyperscan_keywords(lows: Sequence[str]):
    """(database, scratch) matching `lows` caselessly, from the cache; None without Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    import re
    db = load_database([re.escape(kw).encode("utf-8") for kw in lows],
                       hyperscan.HS_FLAG_CASELESS, "hyperscan-keywords")
    return db, hyperscan.Scratch(db)


def _collect(keyword_id, _start, _end, _flags, found):
    found.append(keyword_id)


class KeywordSubstrings:
    """Which keywords occur in a lower-cased line, anywhere: by first position, longest first.

    Python looks each GRAM-character piece of the line up among the keywords' first GRAM
    characters, then asks `in` for the keywords there; Hyperscan (its database cached) reports
    every keyword at every position. Both give exactly the same list.
    """

    def __init__(self, lows: Sequence[str], engine: str = "auto") -> None:
        self._lows = list(lows)  # lower-cased keywords; Hyperscan reports their indices
        self._by_gram, self._short = {}, []
        for kw in self._lows:
            if len(kw) < GRAM:
                self._short.append(kw)
            else:
                self._by_gram.setdefault(kw[:GRAM], []).append(kw)
        self._grams = frozenset(self._by_gram)
        self._hyperscan = None
        # Lines still to answer in Python; None: Python for good ("re", or no Hyperscan wheel).
        self._left = {"auto": HYPERSCAN_AFTER, "hyperscan": 0}.get(engine) if self._lows else None
        self._required = engine == "hyperscan"

    @property
    def name(self) -> str:
        """The engine answering now: 'hyperscan' or 'python'."""
        return "python" if self._hyperscan is None else "hyperscan"

    def load_now(self) -> None:
        """Load Hyperscan now rather than after HYPERSCAN_AFTER lines (same answers either way):
        an epilog drops to the job's user, who may not read the package, before the first line."""
        if self._left is not None:
            self._left = None
            self._hyperscan = _hyperscan_keywords(self._lows)

    def __call__(self, low: str) -> Sequence[str]:
        """The keywords in `low` (lower-cased), ordered by where each first occurs, longest first."""
        if self._left is not None:
            if self._left > 0:
                self._left -= 1
            else:
                self._left = None
                self._hyperscan = _hyperscan_keywords(self._lows)
                if self._hyperscan is None and self._required:
                    raise ImportError("the hyperscan wheel is not installed")
        if self._hyperscan is not None:
            db, scratch = self._hyperscan
            ids = []
            db.scan(low.encode("utf-8", "surrogatepass"), match_event_handler=_collect,
                    context=ids, scratch=scratch)
            if not ids:  # most lines
                return ()
            found = {self._lows[i] for i in ids}
        else:
            found = [kw for kw in self._short if kw in low]
            n = len(low) - GRAM + 1
            if n > 0:
                by_gram = self._by_gram
                pieces = map(low.__getitem__, _slices(n)) if n <= _MAX_SLICES else \
                    (low[i:i + GRAM] for i in range(n))
                found += [kw for gram in self._grams.intersection(pieces)
                          for kw in by_gram[gram] if kw in low]
        if not found:
            return ()
        # Two keywords that start at the same place and are as long are the same keyword.
        return sorted(found, key=lambda kw: (low.find(kw), -len(kw)))


def _slices(n: int) -> list[slice]:
    if len(_SLICES) < n:
        _SLICES.extend(slice(i, i + GRAM) for i in range(len(_SLICES), n))
    return _SLICES[:n]


def make_finder(keywords: "Iterable[tuple] | Callable[[], Iterable[tuple]]",
                terms: Iterable["Term"] = (), engine: str = "auto",
                version: str | None = None) -> PurePythonFinder | HyperscanFinder:
    """The fastest finder available ('auto'), or the one named ('hyperscan' / 're').

    It finds the lines that hold a rule keyword where a word starts (match.keyword_gate) or
    that a vocabulary term's raw gate matches. A keyword is (text, exact case) or (text,
    exact case, lines before, lines after): what its line brings; by default the lines a
    match window spans, NEAR either way. A failure marker's line brings AFTER lines: the
    message, the chain and torchelastic's root-cause fields after it. `keywords` may be a
    function giving them; with the rule set's `version` Hyperscan's tables come from the
    cache when these keywords and terms built them before (~7 ms of Python a run).
    """
    cached = key = None
    if version and engine in ("auto", "hyperscan"):
        from classifier.rules.cache import read_cached
        key = _tables_key(version)
        cached = read_cached("finder", key, binary=True)
        if cached is not None:
            try:
                return HyperscanFinder(tables=cached)
            except ImportError:
                if engine == "hyperscan":
                    raise
                key = None
            except Exception:  # noqa: BLE001 - damaged tables: build them below
                pass
    specs = sorted({spec if len(spec) == 4 else (*spec, NEAR, NEAR)
                    for spec in (keywords() if callable(keywords) else keywords)})
    term_gates = []
    for term in terms:
        for literal in term.gates:
            term_gates.append((literal, None, term.raw_gate, (NEAR, AFTER)))
        if term.gate_pattern:
            term_gates.append((None, term.gate_pattern, term.raw_gate, (NEAR, AFTER)))
    if engine in ("auto", "hyperscan"):
        try:
            kept = [(hint_literal(text), None, keyword_gate(text, exact), (before, after))
                    for text, exact, before, after in _uncovered(specs)]
            tables = HyperscanFinder.tables(kept + term_gates,
                                            {t.raw_gate: t.scan for t in terms if t.scan},
                                            {gate for _, _, gate, _ in kept})
            found = HyperscanFinder(tables=tables)
            if key:
                from classifier.rules.cache import write_cached
                write_cached("finder", key, tables, binary=True)
            return found
        except ImportError:
            if engine == "hyperscan":
                raise
    return PurePythonFinder([(hint_literal(text), None, keyword_gate(text, exact), (before, after))
                             for text, exact, before, after in specs] + term_gates)


def _covers(a: tuple, b: tuple) -> bool:
    """Whether keyword spec `a`'s gate (match.keyword_gate) finds every line `b`'s finds, with
    as much reach: `a` occurs in `b` where a word starts, in a case `a` accepts."""
    (ta, ea, ba, aa), (tb, eb, bb, ab) = a, b
    if ba < bb or aa < ab or (ea and not eb) or not (ta.isascii() and tb.isascii()):
        return False
    hay, needle = (tb, ta) if ea else (tb.lower(), ta.lower())
    p = hay.find(needle)
    while p >= 0:
        # At b's start a's alternatives are b's; inside b, the byte before must be one that
        # a's `[^A-Za-z0-9]` takes. A keyword that starts with no letter or digit is unbounded.
        if p == 0 or not ta[0].isalnum() or not (hay[p - 1].isascii() and hay[p - 1].isalnum()):
            return True
        p = hay.find(needle, p + 1)
    return False


def _uncovered(specs: list[tuple]) -> list[tuple]:
    """`specs` less those another one covers (_covers): a line holding `connection refused`
    is found by `connection` alone, and each extra match Hyperscan reports is a Python call."""
    shortest = sorted(specs, key=lambda s: len(s[0]))
    return [b for b in specs if not any(a is not b and len(a[0]) <= len(b[0]) and _covers(a, b)
                                        and not (len(a[0]) == len(b[0]) and _covers(b, a) and a > b)
                                        for a in shortest)]


def _tables_key(version: str) -> str:
    """The cache key of a rule set's finder tables: its rule files' digest and the sources
    that turn its rules into gates."""
    # os.path, not pathlib: importing pathlib cost every big input's run ~4 ms.
    from classifier.rules.cache import cache_key
    here = os.path.dirname(os.path.abspath(__file__))
    up = os.path.dirname(here)
    sources = [os.path.join(here, name) for name in ("finder.py", "gates.py", "hit.py")]
    sources += [os.path.join(up, "vocabulary.py"), os.path.join(up, "rules", "model.py"),
                os.path.join(up, "rules", "load.py")]
    texts = []
    for path in sources:
        with open(path, "rb") as f:
            texts.append(f.read())
    return cache_key(b"finder tables", version.encode(), *texts)
