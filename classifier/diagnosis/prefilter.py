"""Stage 1b, for every input: pick the lines worth normalising, at grep speed.

A job log is almost all healthy chatter. Instead of normalising every line, one pass over
large chunks finds the lines that hold a rule keyword or a failure/success marker
(finder.py), and only those lines — with the neighbours their readers may look at — plus the
head (where every rank announces itself) and the tail (where the failure region is) go on
down the pipeline. A log no longer than the head and tail together is read whole.
"""

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from classifier.diagnosis.decode import decode_whole
from classifier.diagnosis.finder import AFTER, BEFORE, NEAR, HyperscanFinder, PurePythonFinder
from classifier.diagnosis.chunking import (Scanners, count_lines, line_chunks, newlines, steady_heap,
                                           use_numpy)
from classifier.diagnosis import split
from classifier.diagnosis.read import MAX_LINE, RawLine, decode_line
from classifier.diagnosis.storms import KEEP as STORM_KEEP, RUN as STORM_RUN, Storms

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.read import Warnings

BIG_CHUNK = 1 << 20         # big enough that per-chunk work vanishes, small for memory
# Threads searching chunks ahead (Hyperscan only): one. Hyperscan lets go of the GIL while it
# scans, but each match it reports is a Python call that takes it back; a second scanner only
# fights the reader and the first for it (the keyword-dense 1 GB log: more CPU and more wall).
SCANNERS = 1
HEAD = 2000                  # every rank's start-up lines: who took part in the job
TAIL = 200                   # the failure region
BACK = max(BEFORE, TAIL)     # lines before a chunk kept for its first windows to reach back to
# Lines of one input that go on to normalisation and the rules. A real job log, however big,
# has a few thousand lines with a keyword or marker (the 1 GB benchmark log: tens of
# thousands); past this many the input is a storm of one message (34 M lines of `exit`), each
# line costs ~20 us downstream, and only the tail is read on, with a warning.
SELECT_BUDGET = 250_000
# Chunks read before newlines are counted with numpy (where installed): its import costs about
# what bytes.count spends on 100 MB more than numpy, and 15 MB of memory. Past it, freed chunks
# are reused rather than mapped afresh (chunking.steady_heap).
NUMPY_AFTER = 128

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

    def __init__(self, source, warnings, repeats=None):
        self.source = source
        self.warnings = warnings
        self.base = 0               # lines before the current chunk
        self.emitted = 0            # highest line number already emitted
        self.owed = 0               # lines still owed from the start of the next chunk
        # The end of the chunks before, which the next chunk's windows may reach back to:
        # (first lineno, line count, chunk) blocks, the newest last: the chunk's last `line
        # count` lines, found and cut only when a window reaches back (most chunks' do not).
        self.recent = deque()
        self.recent_lines = 0  # lines in `recent` but its oldest block
        self.budget = SELECT_BUDGET  # lines still to emit before only the tail is kept
        self.spent = False
        self.storms = Storms(repeats)
        self.stormy = False         # most of the last chunk's lines were a storm's copies
        self.tail_from = None       # the first of the input's last TAIL lines, once known

    def _spent(self):
        if not self.spent:
            self.spent = True
            self.warnings.add("select_budget", f"{self.source}: over {SELECT_BUDGET:,} lines hold "
                              f"a rule keyword or marker (a storm of one message?); after them "
                              f"only the last {TAIL} lines were diagnosed")

    def _line(self, lineno, data):
        """The RawLine of line `lineno`, or None for one copy too many of a storm's line."""
        if self.tail_from is None or lineno < self.tail_from:
            if not self.storms.keep(data, lineno):
                self.emitted = lineno
                return None
        else:
            self.storms.claim(data, lineno)
        if len(data) > MAX_LINE:
            data = data[:MAX_LINE]
            self.warnings.add("line_truncated", f"{self.source}: lines over {MAX_LINE // 1024} KiB truncated")
        self.emitted = lineno
        self.budget -= 1
        return RawLine(self.source, lineno, decode_line(data, self.source, self.warnings))

    def whole(self, chunk):
        """Yield every line of a chunk that holds the whole input (it ends with a newline):
        what chunk() yields when head and tail cover it all, in one split."""
        lines = chunk.split(b"\n")
        lines.pop()  # the empty piece after the final newline
        # Under KEEP lines before the tail, none can be a storm's copy: no line is looked at
        # for one (a small log, most of triage's, pays nothing for storms).
        short = len(lines) <= STORM_KEEP + TAIL
        self.tail_from = self.base + (1 if short else len(lines) - TAIL + 1)
        texts = decode_whole(chunk, lines, self.warnings)
        if texts is None:
            for lineno, data in enumerate(lines, self.base + 1):
                line = self._line(lineno, data)
                if line is not None:
                    yield line
            return
        # _line's work with the text decoded at once: no line is over MAX_LINE.
        source, storms, tail_from = self.source, self.storms, self.tail_from
        for lineno, data, text in zip(range(self.base + 1, self.base + 1 + len(lines)), lines, texts):
            if lineno < tail_from:
                if not storms.keep(data, lineno):
                    self.emitted = lineno
                    continue
            elif storms.pending:
                storms.claim(data, lineno)
            self.emitted = lineno
            self.budget -= 1
            yield RawLine(source, lineno, text)

    def chunk(self, chunk, found, last=False, total=None):
        """Yield the selected RawLines of a chunk that ends with a newline.

        The lines are walked once, in order, from each selected line's window to the next:
        a chunk where every line is selected (a storm of one keyword) costs one pass and no
        list of spans, whatever the selection rate. The input's last chunk also yields its
        last TAIL lines, as one more selected line that reaches BEFORE back and to the end.
        """
        if not last and found and self._copies_only(chunk, found, total):
            return
        if self.budget <= 0:
            # Spent: only the tail is read on.
            self._spent()
            found, self.owed = {}, 0
            head = 0
        else:
            head = max(self.owed, HEAD - self.base)  # the head, and lines owed by the last chunk
        self.owed = 0
        stop = len(chunk)  # a storm's copies may be skipped up to here: never into the tail
        if last:
            total = count_lines(chunk) if total is None else total
            self.tail_from = self.base + total - TAIL + 1
            spans = _line_spans(chunk, len(chunk), TAIL, False)
            if spans:
                tail = stop = spans[0][0]
                found[tail] = (BEFORE, len(chunk))
                found = dict(sorted(found.items()))
        starts = list(found)
        if starts:
            # Lines from the end of the previous chunk that the first segment reaches back to.
            first = count_lines(chunk, 0, starts[0])
            reach = found[starts[0]][0]
            if first < reach and not self._storm_copy(chunk, starts[0], self.base + first + 1, False):
                for lineno, data in self._recent(reach - first):
                    if lineno > self.emitted:
                        line = self._line(lineno, data)
                        if line is not None:
                            yield line
        total = count_lines(chunk) if total is None else total
        dropped = self.storms.dropped
        walk = [0, 0]  # local index of the first line not yet walked, and its byte offset

        def forward(count):
            upto, pos = walk
            for _ in range(count):
                if pos >= len(chunk):
                    break
                nl = chunk.find(b"\n", pos)
                if self.base + upto + 1 > self.emitted:
                    line = self._line(self.base + upto + 1, chunk[pos:nl])
                    if line is not None:
                        yield line
                pos, upto = nl + 1, upto + 1
            walk[:] = upto, pos

        yield from forward(head)
        k, at = 0, 0  # the local line index of byte offset `at`
        skip_to = 0
        for start in starts:
            if start < skip_to:
                continue
            copies = self.storms.rest_is_storm(chunk, walk[1], stop) if walk[1] < stop else None
            if copies is not None:
                # The rest of the chunk (up to the tail) is copies of a storm's lines: count
                # them, walk none.
                skipped = count_lines(chunk, walk[1], stop)
                self.storms.skipped(self.base + walk[0] + 1, skipped, copies)
                walk[:] = walk[0] + skipped, stop
                self.emitted, self.owed, skip_to = self.base + walk[0], 0, stop
                if start < skip_to:
                    continue
            if self.budget <= 0 and found[start][1] != len(chunk):
                self._spent()
                continue
            k += count_lines(chunk, at, start)
            at = start
            if k >= walk[0] and self._storm_copy(chunk, start, self.base + k + 1):
                # A storm's copy past its allowance: counted; no reader looks around it.
                walk[:] = k + 1, chunk.find(b"\n", start) + 1
                continue
            reach, after = found[start]
            if k - reach > walk[0]:
                # A gap since the last window: step back `reach` lines from this one.
                pos = start
                for _ in range(reach):
                    pos = chunk.rfind(b"\n", 0, pos - 1) + 1
                walk[:] = k - reach, pos
            yield from forward(k + after + 1 - walk[0])
            self.owed = max(self.owed, k + after + 1 - total)
        self.stormy = self.storms.dropped - dropped > total // 2
        self._remember(chunk, total)

    def _copies_only(self, chunk, found, total):
        """Whether every line found in `chunk` (not the input's last) is a storm's copy past its
        allowance, with no line owed and no head to read: then they are counted at once, and
        the chunk is done as the walk below would do it, one copy after the other, reading
        nothing. Not when the walk would ask rest_is_storm (after RUN copies in a row)."""
        storms = self.storms
        if self.budget <= 0 or self.owed or self.base < HEAD or storms.run + len(found) > STORM_RUN:
            return False
        find, starts = chunk.find, list(found)
        # Line numbers by counting from the nearer end: a pass over the whole chunk costs
        # more than the rest of this; the first copy's is only wanted for a storm's first.
        first = self.base + count_lines(chunk, 0, starts[0]) + 1 if not storms.dropped else 0
        if not storms.all_spent([chunk[s:find(b"\n", s)] for s in starts], first):
            return False
        total = count_lines(chunk) if total is None else total
        self.emitted = self.base + total - count_lines(chunk, starts[-1]) + 1
        self.stormy = len(starts) > total // 2
        self._remember(chunk, total)
        return True

    def _storm_copy(self, chunk, start, lineno, count=True):
        """Whether the line at `start` is a storm's copy past its allowance (storms.spent):
        then it is counted as skipped (unless not `count`), and no window is read around it."""
        if lineno <= self.emitted or self.tail_from is not None and lineno >= self.tail_from:
            return False
        if not self.storms.spent(chunk[start:chunk.find(b"\n", start)], lineno, peek=not count):
            return False
        if count:
            self.emitted = lineno
        return True

    def _remember(self, chunk, total):
        # The whole chunk is kept (no copy); its last `count` lines are cut out only if a
        # window reaches back into them (_recent), which most chunks' windows do not.
        count = min(total, BACK)
        recent = self.recent
        if recent:
            self.recent_lines += count
        recent.append((self.base + total - count + 1, count, chunk))
        # The oldest block goes once the ones after it hold BACK lines.
        while len(recent) > 1 and self.recent_lines >= BACK:
            self.recent_lines -= recent[1][1]
            recent.popleft()
        self.base += total

    def _recent(self, count):
        """(lineno, bytes) of the last `count` (at most BACK) lines before this chunk."""
        out = []
        for first, lines, block in reversed(self.recent):
            pos = len(block)
            for _ in range(lines):
                pos = block.rfind(b"\n", 0, pos - 1) + 1
            lines = block[pos:].split(b"\n")
            lines.pop()
            out[:0] = zip(range(first, first + len(lines)), lines)
            if len(out) >= count:
                break
        return out[-count:]

    def skip(self, chunk, copies):
        """Pass over a chunk (not the input's last) whose every line is a copy of a storm's
        line, `copies` of each shape (Storms.covers): count its lines, read none, at C speed."""
        total = count_lines(chunk)
        self.storms.skipped(self.base + 1, total, copies)
        self.owed = 0
        self._remember(chunk, total)
        self.emitted = self.base


def select_lines(chunks: Iterable[bytes], source: str, warnings: "Warnings",
                 finder: "PurePythonFinder | HyperscanFinder | Callable[[], object]",
                 chunk_bytes: int = BIG_CHUNK, scanners: int | None = None,
                 repeats: dict | None = None, path: str | None = None) -> Iterator[RawLine]:
    """Yield the RawLines of an input worth diagnosing, from its byte chunks.

    `finder` may be a function that makes one: an input of at most HEAD + TAIL lines (most
    logs) is read whole, and then none is made.

    With Hyperscan, which lets go of the GIL while it scans, `scanners` threads (default:
    SCANNERS where there is more than one core; 0: none) search the next chunks while this
    one is read on; the chunks in flight are bounded, so memory stays flat; a child process
    scans half of a big file at `path` (split.py). Copies of a line past storms.KEEP are
    counted, not yielded (storms.py), with a warning; `repeats` gets {lineno: copies} for
    each line read that ends a run of skipped copies of itself.
    """
    selector = _Selector(source, warnings, repeats)
    yield from _select(selector, chunks, source, warnings, finder, chunk_bytes, scanners, path)
    storm = selector.storms.warning(source)
    if storm:
        warnings.add("repeated_lines", storm)


def _made(finder):  # the finder, made now if it was given as a function that makes one
    return finder() if callable(finder) and not hasattr(finder, "scan") else finder


def _select(selector, chunks, source, warnings, finder, chunk_bytes, scanners, path):
    size = split.big_file(path, chunk_bytes) if scanners != 0 else 0
    if size and split.can_fork(finder := _made(finder)):
        child = split.Child(path, size, chunk_bytes, finder)  # scans the file's second half
        try:
            yield from _threaded(selector, split.parent_pieces(path, size, chunk_bytes, source, warnings),
                                 finder, SCANNERS, child)
        finally:
            child.close()
        return
    pieces = line_chunks(chunks, source, warnings, chunk_bytes)
    first = next(pieces, None)
    if first is None:
        return
    pieces = itertools.chain([first], pieces)
    if first[1] and count_lines(first[0]) <= HEAD + TAIL:
        # Head and tail cover every line: nothing to search for.
        yield from selector.whole(first[0])
        return
    finder = _made(finder)
    if scanners is None:
        scanners = SCANNERS if finder.parallel and (os.cpu_count() or 1) > 1 else 0
    if scanners < 1 or first[1]:  # one piece (most logs): no thread to start
        for chunk, last in pieces:
            copies = _storm_copies(selector, chunk, last)
            if copies is not None:
                selector.skip(chunk, copies)
                continue
            found = finder.scan(chunk) if selector.budget > 0 else {}
            yield from selector.chunk(chunk, found, last)
        return
    yield from _threaded(selector, ((None, chunk, last) for chunk, last in pieces), finder, scanners)


def _threaded(selector, pieces, finder, scanners, child=None):
    pool = Scanners(scanners, finder)
    try:
        ahead = deque()
        for n, (k, chunk, last) in enumerate(pieces):
            if n == NUMPY_AFTER:
                use_numpy()
                steady_heap()
            # A chunk of nothing but a storm's copies is neither scanned nor walked.
            copies = _storm_copies(selector, chunk, last)
            if copies is not None:
                ahead.append((chunk, last, copies, None, None))
            elif child is not None and k is not None and k >= child.first:
                ahead.append((chunk, last, None, split.ChildBox(child, k, finder, chunk), None))
            else:
                # Counted here while the scanner scans, the critical path (each match it reports
                # waits for the GIL); numpy's count (past NUMPY_AFTER) lets go of the GIL too.
                # Dense 1 GB log: 1.84 / 1.86 -> 1.81 / 1.83 s best / median counted there.
                done = pool.submit(chunk, count=False)
                ahead.append((chunk, last, None, done, newlines(chunk)))
            if len(ahead) > scanners:
                yield from _take(selector, pool, *ahead.popleft())
        while ahead:
            yield from _take(selector, pool, *ahead.popleft())
    finally:
        pool.close()


def _storm_copies(selector, chunk, last):
    return None if last or not selector.stormy else selector.storms.covers(chunk)


def _take(selector, pool, chunk, last, copies, done, counted):
    if copies is None:
        # Asked again: the storm may have been found since the chunk was sent to be scanned.
        copies = _storm_copies(selector, chunk, last)
    if copies is not None:
        selector.skip(chunk, copies)
        return ()
    found, total = pool.result(done)
    return selector.chunk(chunk, found, last, total if counted is None else counted)
