"""Stage 1b, for big inputs: pick the lines worth normalising, at grep speed.

A gigabyte job log is almost all healthy chatter. Instead of normalising every line, one pass
over large chunks finds the lines that hold a rule keyword or a failure/success marker, and
only those lines — with the neighbours a rule may look at (the windows and `context`) — plus
the head (where every rank announces itself) and the tail (where the failure region is) go
on down the pipeline. The literal search is Hyperscan where its wheel is installed and a
trie-shaped `re` alternation otherwise; both select exactly the same lines.
"""

import itertools
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from classifier.diagnosis.match import CONTEXT_LINES, keyword_gate, trie_regex
from classifier.diagnosis.read import MAX_LINE, RawLine, decode_line
from classifier.vocabulary import ROOT_FIELD_LINES

if TYPE_CHECKING:
    from classifier.diagnosis.read import Warnings
    from classifier.vocabulary import Term

BIG_CHUNK = 4 << 20         # big enough that per-chunk work vanishes, small for memory
SCANNERS = 2                 # threads searching chunks ahead (Hyperscan only)
NEAR = 2                     # a match window reaches two lines back
BEFORE = CONTEXT_LINES + NEAR  # ... and a rule with `context` looks 50 lines further back
AFTER = max(10, ROOT_FIELD_LINES)  # after a failure marker: its message, chain, root-cause fields
HEAD = 2000                  # every rank's start-up lines: who took part in the job
TAIL = 200                   # the failure region
# Lines of one input that go on to normalisation and the rules. A real job log, however big,
# has a few thousand lines with a keyword or marker (the 1 GB benchmark log: tens of
# thousands); past this many the input is a storm of one message (34 M lines of `exit`), each
# line costs ~20 us downstream, and only the tail is read on, with a warning.
SELECT_BUDGET = 250_000

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
        self._gates = by_literal
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


class HyperscanFinder:
    """The same line starts, from Hyperscan's matcher (every gate in one pass)."""

    name = "hyperscan"
    parallel = True

    def __init__(self, gates: Iterable[Gate]) -> None:
        import hyperscan
        reach = {}
        for _, _, gate, gate_reach in gates:
            reach[gate] = _widest(reach.get(gate), gate_reach)
        self._reach = list(reach.values())  # by expression id
        expressions = [g.encode("utf-8") for g in reach]
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=expressions, ids=list(range(len(expressions))),
                         elements=len(expressions),
                         flags=[hyperscan.HS_FLAG_MULTILINE] * len(expressions))
        self._scratch = threading.local()  # a scan's scratch space is its thread's own
        self._new_scratch = lambda: hyperscan.Scratch(self._db)

    def scan(self, chunk: bytes) -> dict[int, Reach]:
        """The starts of the lines in `chunk` a gate matches, in order, with their reach."""
        found = []
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            scratch = self._scratch.space = self._new_scratch()
        self._db.scan(chunk, match_event_handler=lambda gate_id, _from, to, _flags, _ctx:
                      found.append((to, gate_id)), scratch=scratch)
        out, rfind, reach = {}, chunk.rfind, self._reach
        for to, gate_id in found:
            # A gate may end on the newline after its line (`[^A-Za-z0-9]`): look before it.
            start = rfind(b"\n", 0, to - 1) + 1
            out[start] = _widest(out.get(start), reach[gate_id])
        return dict(sorted(out.items()))

    def line_starts(self, chunk: bytes) -> list[int]:
        """Sorted offsets of the starts of lines in `chunk` that a gate matches."""
        return list(self.scan(chunk))


def make_finder(keywords: Iterable[tuple], terms: Iterable["Term"] = (),
                engine: str = "auto") -> PurePythonFinder | HyperscanFinder:
    """The fastest finder available ('auto'), or the one named ('hyperscan' / 're').

    It finds the lines that hold a rule keyword where a word starts (match.keyword_gate) or
    that a vocabulary term's raw gate matches. A keyword is (text, exact case) or (text,
    exact case, lines before, lines after): what its line brings; by default the lines a
    match window spans, NEAR either way. A failure marker's line brings AFTER lines: the
    message, the chain and torchelastic's root-cause fields after it.
    """
    gates = []
    for spec in sorted(set(keywords)):
        text, exact, before, after = spec if len(spec) == 4 else (*spec, NEAR, NEAR)
        gates.append((text.lower(), None, keyword_gate(text, exact), (before, after)))
    for term in terms:
        for literal in term.gates:
            gates.append((literal, None, term.raw_gate, (NEAR, AFTER)))
        if term.gate_pattern:
            gates.append((None, term.gate_pattern, term.raw_gate, (NEAR, AFTER)))
    if engine in ("auto", "hyperscan"):
        try:
            return HyperscanFinder(gates)
        except ImportError:
            if engine == "hyperscan":
                raise
    return PurePythonFinder(gates)


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

    def __init__(self, source, warnings):
        self.source = source
        self.warnings = warnings
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

    def chunk(self, chunk, found, last=False):
        """Yield the selected RawLines of a chunk that ends with a newline.

        The lines are walked once, in order, from each selected line's window to the next:
        a chunk where every line is selected (a storm of one keyword) costs one pass and no
        list of spans, whatever the selection rate. The input's last chunk also yields its
        last TAIL lines, as one more selected line that reaches BEFORE back and to the end.
        """
        if self.budget <= 0:
            # Spent: only the tail is read on.
            self._spent()
            found, self.owed = {}, 0
            head = 0
        else:
            head = max(self.owed, HEAD - self.base)  # the head, and lines owed by the last chunk
        self.owed = 0
        if last:
            spans = _line_spans(chunk, len(chunk), TAIL, False)
            if spans:
                tail = spans[0][0]
                found[tail] = (BEFORE, len(chunk))
                found = dict(sorted(found.items()))
        starts = list(found)
        if starts:
            # Lines from the end of the previous chunk that the first segment reaches back to.
            first = chunk.count(b"\n", 0, starts[0])
            reach = found[starts[0]][0]
            if first < reach:
                for lineno, data in list(self.recent)[-(reach - first):]:
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
            if self.budget <= 0 and found[start][1] != len(chunk):
                self._spent()
                continue
            k += chunk.count(b"\n", at, start)
            at = start
            reach, after = found[start]
            if k - reach > walk[0]:
                # A gap since the last window: step back `reach` lines from this one.
                pos = start
                for _ in range(reach):
                    pos = chunk.rfind(b"\n", 0, pos - 1) + 1
                walk[:] = k - reach, pos
            yield from forward(k + after + 1 - walk[0])
            self.owed = max(self.owed, k + after + 1 - total)
        total = chunk.count(b"\n")
        tail_spans = _line_spans(chunk, len(chunk), min(total, self.recent.maxlen), False)
        first_tail = self.base + total - len(tail_spans) + 1
        for k, (s, e) in enumerate(tail_spans):
            self.recent.append((first_tail + k, chunk[s:e]))
        self.base += total



def _line_chunks(chunks, source, warnings, chunk_bytes):
    """Yield (chunk, last): pieces of about chunk_bytes that end with a newline, in order.

    One piece is held back until the next is cut, so the last is known as the last; a short
    remainder joins the piece before it, so the tail is rarely split.
    """
    held = None
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
            if len(pending) > MAX_LINE and pending.rfind(b"\n") < 0:
                del pending[MAX_LINE:]
                overlong = True
                warnings.add("line_truncated", f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        cut = pending.rfind(b"\n") + 1
        if cut == 0:
            del pending[MAX_LINE:]
            overlong = True
            warnings.add("line_truncated", f"{source}: lines over {MAX_LINE // 1024} KiB truncated")
            continue
        with memoryview(pending) as view:
            chunk = bytes(view[:cut])   # one copy, not two
        del pending[:cut]
        if held is not None:
            yield held, False
        held = chunk
    if pending:
        if not pending.endswith(b"\n"):
            pending += b"\n"
        held = (held or b"") + bytes(pending)
    if held:
        yield held, True


def select_lines(chunks: Iterable[bytes], source: str, warnings: "Warnings",
                 finder: PurePythonFinder | HyperscanFinder,
                 chunk_bytes: int = BIG_CHUNK, scanners: int | None = None) -> Iterator[RawLine]:
    """Yield the RawLines of an input worth diagnosing, from its byte chunks.

    With Hyperscan, which lets go of the GIL while it scans, `scanners` threads (default:
    one per core, at most SCANNERS) search the next chunks while this one is read on; the
    chunks in flight are bounded, so memory stays flat.
    """
    selector = _Selector(source, warnings)
    pieces = _line_chunks(chunks, source, warnings, chunk_bytes)
    first = next(pieces, None)
    if first is None:
        return
    pieces = itertools.chain([first], pieces)
    if scanners is None:
        scanners = min(SCANNERS, os.cpu_count() or 1) if finder.parallel else 1
    if scanners <= 1 or first[1]:  # one piece (most logs): no thread to start
        for chunk, last in pieces:
            found = finder.scan(chunk) if selector.budget > 0 else {}
            yield from selector.chunk(chunk, found, last)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(scanners, thread_name_prefix="dsdiag-scan") as pool:
        ahead = deque()
        for chunk, last in pieces:
            ahead.append((chunk, last, pool.submit(finder.scan, chunk)))
            if len(ahead) > scanners:
                chunk, last, found = ahead.popleft()
                yield from selector.chunk(chunk, found.result(), last)
        while ahead:
            chunk, last, found = ahead.popleft()
            yield from selector.chunk(chunk, found.result(), last)
