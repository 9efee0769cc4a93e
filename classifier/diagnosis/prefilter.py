"""Stage 1b, for big inputs: pick the lines worth normalising, at grep speed.

A gigabyte job log is almost all healthy chatter. Instead of normalising every line, one pass
over large chunks finds the lines that hold a rule keyword or a failure/success marker, and
only those lines — with the neighbours a rule may look at (the windows and `context`) — plus
the head (where every rank announces itself) and the tail (where the failure region is) go
on down the pipeline. The literal search is Hyperscan where its wheel is installed and a
trie-shaped `re` alternation otherwise; both select exactly the same lines.
"""

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from classifier.diagnosis.match import CONTEXT_LINES, trie_regex
from classifier.diagnosis.read import MAX_LINE, RawLine, decode_line
from classifier.vocabulary import ROOT_FIELD_LINES

if TYPE_CHECKING:
    from classifier.diagnosis.read import Warnings

BIG_CHUNK = 4 << 20         # big enough that per-chunk work vanishes, small for memory
BEFORE = CONTEXT_LINES + 2   # a rule's context and its two-line-back window
AFTER = max(10, ROOT_FIELD_LINES)  # windows ahead; torchelastic's root-cause block below its title
HEAD = 2000                  # every rank's start-up lines: who took part in the job
TAIL = 200                   # the failure region
# Lines of one input that go on to normalisation and the rules. A real job log, however big,
# has a few thousand lines with a keyword or marker (the 1 GB benchmark log: tens of
# thousands); past this many the input is a storm of one message (34 M lines of `exit`), each
# line costs ~20 us downstream, and only the tail is read on, with a warning.
SELECT_BUDGET = 250_000

class PurePythonFinder:
    """Line starts of lines holding any literal or gate pattern, via one trie-shaped `re`."""

    name = "re"

    def __init__(self, literals: Iterable[str], patterns: Iterable[str] = ()) -> None:
        import re
        alternatives = [trie_regex(sorted(literals))] + list(patterns)
        self._pattern = re.compile("|".join(alternatives).encode("utf-8"))

    def line_starts(self, chunk: bytes) -> list[int]:
        """Sorted offsets of the starts of lines in `chunk` that hold a literal."""
        low = chunk.lower()
        out, last = [], -1
        for m in self._pattern.finditer(low):
            start = low.rfind(b"\n", 0, m.start()) + 1
            if start != last:
                out.append(start)
                last = start
        return out


class HyperscanFinder:
    """The same line starts, from Hyperscan's matcher (all literals and patterns in one pass)."""

    name = "hyperscan"

    def __init__(self, literals: Iterable[str], patterns: Iterable[str] = ()) -> None:
        import hyperscan
        import re
        expressions = [re.escape(lit).encode("utf-8") for lit in sorted(literals)]
        expressions += [p.encode("utf-8") for p in patterns]
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=expressions, ids=list(range(len(expressions))),
                         elements=len(expressions),
                         flags=[hyperscan.HS_FLAG_CASELESS] * len(expressions))

    def line_starts(self, chunk: bytes) -> list[int]:
        """Sorted offsets of the starts of lines in `chunk` that hold a literal."""
        ends = []
        self._db.scan(chunk, match_event_handler=lambda _id, _from, to, _flags, _ctx: ends.append(to))
        starts = sorted({chunk.rfind(b"\n", 0, end - 1) + 1 for end in ends})
        return starts


def make_finder(literals: Iterable[str], patterns: Iterable[str] = (),
                engine: str = "auto") -> PurePythonFinder | HyperscanFinder:
    """The fastest finder available ('auto'), or the one named ('hyperscan' / 're').

    `patterns` are regexes written for lower-cased text (the shapes no literal gates).
    """
    literals = {lit.lower() for lit in literals}
    if engine in ("auto", "hyperscan"):
        try:
            return HyperscanFinder(literals, patterns)
        except ImportError:
            if engine == "hyperscan":
                raise
    return PurePythonFinder(literals, patterns)


def _line_spans(chunk, start, count, forward):
    """Offsets (start, end) of `count` lines from the line starting at `start`, either way."""
    spans = []
    pos = start
    if forward:
        for _ in range(count):
            if pos >= len(chunk):
                break
            nl = chunk.find(b"\n", pos)
            spans.append((pos, nl))
            pos = nl + 1
    else:
        for _ in range(count):
            if pos <= 0:
                break
            prev = chunk.rfind(b"\n", 0, pos - 1) + 1
            spans.append((prev, pos - 1))
            pos = prev
        spans.reverse()
    return spans


class _Selector:
    """Chooses and emits the lines of one input in order, each once, with true line numbers."""

    def __init__(self, source, warnings, finder):
        self.source = source
        self.warnings = warnings
        self.finder = finder
        self.base = 0               # lines before the current chunk
        self.emitted = 0            # highest line number already emitted
        self.owed = 0               # lines still owed from the start of the next chunk
        self.recent = deque(maxlen=max(BEFORE, TAIL))  # (lineno, bytes) of the last chunk's end
        self.budget = SELECT_BUDGET  # lines still to emit before only the tail is kept
        self.spent = False

    def _spent(self):
        if not self.spent:
            self.spent = True
            self.warnings.add("select_budget", f"{self.source}: over {SELECT_BUDGET:,} lines hold "
                              f"a rule keyword or marker (a storm of one message?); after them "
                              f"only the last {TAIL} lines were diagnosed")

    def _line(self, lineno, data):
        if len(data) > MAX_LINE:
            data = data[:MAX_LINE]
            self.warnings.add("line_truncated", f"{self.source}: lines over {MAX_LINE // 1024} KiB truncated")
        self.emitted = lineno
        self.budget -= 1
        return RawLine(self.source, lineno, decode_line(data, self.source, self.warnings))

    def chunk(self, chunk):
        """Yield the selected RawLines of a chunk that ends with a newline.

        The lines are walked once, in order, from each selected line's window to the next:
        a chunk where every line is selected (a storm of one keyword) costs one pass and no
        list of spans, whatever the selection rate.
        """
        if self.budget <= 0:
            # Spent: no search at all, only the tail (kept below) is read on.
            self._spent()
            starts, self.owed = [], 0
            head = 0
        else:
            starts = self.finder.line_starts(chunk)
            head = max(self.owed, HEAD - self.base)  # the head, and lines owed by the last chunk
        self.owed = 0
        if starts:
            # Lines from the end of the previous chunk that the first segment reaches back to.
            first = chunk.count(b"\n", 0, starts[0])
            if first < BEFORE:
                for lineno, data in list(self.recent)[-(BEFORE - first):]:
                    if lineno > self.emitted:
                        yield self._line(lineno, data)
        total = chunk.count(b"\n")
        walk = [0, 0]  # local index of the first line not yet walked, and its byte offset

        def forward(count):
            upto, pos = walk
            for _ in range(count):
                if pos >= len(chunk):
                    break
                nl = chunk.find(b"\n", pos)
                if self.base + upto + 1 > self.emitted:
                    yield self._line(self.base + upto + 1, chunk[pos:nl])
                pos, upto = nl + 1, upto + 1
            walk[:] = upto, pos

        yield from forward(head)
        k, at = 0, 0  # the local line index of byte offset `at`
        for start in starts:
            if self.budget <= 0:
                self._spent()
                break
            k += chunk.count(b"\n", at, start)
            at = start
            if k - BEFORE > walk[0]:
                # A gap since the last window: step back BEFORE lines from this one.
                pos = start
                for _ in range(BEFORE):
                    pos = chunk.rfind(b"\n", 0, pos - 1) + 1
                walk[:] = k - BEFORE, pos
            yield from forward(k + AFTER + 1 - walk[0])
            self.owed = max(self.owed, k + AFTER + 1 - total)
        total = chunk.count(b"\n")
        tail_spans = _line_spans(chunk, len(chunk), min(total, self.recent.maxlen), False)
        first_tail = self.base + total - len(tail_spans) + 1
        for k, (s, e) in enumerate(tail_spans):
            self.recent.append((first_tail + k, chunk[s:e]))
        self.base += total

    def finish(self):
        """Yield the tail lines not yet emitted."""
        for lineno, data in list(self.recent)[-TAIL:]:
            if lineno > self.emitted:
                yield self._line(lineno, data)


def select_lines(chunks: Iterable[bytes], source: str, warnings: "Warnings",
                 finder: PurePythonFinder | HyperscanFinder,
                 chunk_bytes: int = BIG_CHUNK) -> Iterator[RawLine]:
    """Yield the RawLines of an input worth diagnosing, from its byte chunks."""
    selector = _Selector(source, warnings, finder)
    pending = bytearray()
    overlong = False  # dropping the rest of a line past MAX_LINE
    for block in chunks:
        if overlong:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block = block[nl:]   # keep the newline: it ends the truncated line in `pending`
            overlong = False
        pending += block
        if len(pending) < chunk_bytes:
            last_nl = pending.rfind(b"\n")
            if last_nl < 0 and len(pending) > MAX_LINE:
                del pending[MAX_LINE:]
                overlong = True
                selector.warnings.add("line_truncated",
                                      f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        cut = pending.rfind(b"\n") + 1
        if cut == 0:
            del pending[MAX_LINE:]
            overlong = True
            selector.warnings.add("line_truncated",
                                  f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        with memoryview(pending) as view:
            chunk = bytes(view[:cut])   # one copy, not two
        del pending[:cut]
        yield from selector.chunk(chunk)
    if pending:
        if not pending.endswith(b"\n"):
            pending += b"\n"
        yield from selector.chunk(bytes(pending))
    yield from selector.finish()
