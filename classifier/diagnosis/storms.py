"""Storms of one line: the copies past the first few hundred are counted, not diagnosed.

A job that dies in a retry loop prints one warning a hundred thousand times (c10d's "client
socket has failed to connect", a traceback re-raised in a loop, a loader's retry). Each copy
the prefilter passes on costs ~20-100 us downstream, so such a log took 70x the time of a
normal one of its size, and every copy after the first few hundred tells nothing new. Lines are
grouped by shape: the bytes without their digits and hex addresses (ports, steps, `object at
0x7f3a...` and counters differ from copy to copy). A shape whose lines name a rank or process
(`[rank3]:`, `[Rank 3]`, `node-1:4242:4300 [3]`, `3: `) is read PER_RANK more times for each
further rank its read copies name, so a timeout that 4,096 ranks each report once is read 4,096
times, and a storm from eight ranks KEEP + 7 x PER_RANK times; only the copies read are
searched for rank labels, so the skipped ones cost no more than any other. The last TAIL lines
of an input are always read (the storm's end is where the failure is). A copy that is not read
brings no window either (the lines around it are read only if something else selects them), and
a chunk whose selected lines are all such copies is counted in one go (all_spent): a healthy
log whose metrics upload retries every few seconds costs little more than its scan.
"""

from collections import Counter

from classifier.precompiled import re_compile

KEEP = 256            # copies of one shape read per input; later ones are counted only
PER_RANK = 32         # ... and this many more for each further rank its copies read name
WARN = 10_000         # skipped lines that make a storm worth a warning (fewer: chatter)
RUN = 4096            # lines skipped in a row before the rest of a chunk is looked at whole
RANK_SPAN = 128       # bytes at a line's start searched for its rank labels
MAX_SHAPES = 1 << 16  # shapes remembered at once (bounded memory: hashes, not lines)
MAX_RANKS = 1 << 14   # ranks remembered per shape
_DIGITS = b"0123456789"
# A hex address (`<urllib3.connection.HTTPSConnection object at 0x7f3ac1d2e5b0>`) holds letters
# too: each retry line would be a shape of its own. Removed before the digits, and only from
# a line that holds `0x`, so other lines pay one substring test.
_HEX = re_compile(rb"0x[0-9a-fA-F]+")
# On a shape (digits gone): does the line carry a rank or process label?
_RANKISH = re_compile(rb"(?i)rank|default|worker|trainer|^\s*:|^\[,\]<|^[\w.-]{1,253}:: \[\]")
# The labels themselves, bounded (a garbled line must not make a token kilobytes long): a
# word's on the lower-cased start of the line (the lookahead lets `re` skip ahead fast),
# a position's at its very start.
_RANK_WORD = re_compile(rb"(?=[rdwt])(?:rank|default|worker|trainer)[^0-9\n]{0,3}[0-9]{1,9}")
_RANK_LEAD = re_compile(rb"\s{0,8}\d{1,9}:|\[\d{1,9},\d{1,9}\]|[\w.-]{1,253}:\d{1,10}:\d{1,10} \[\d{1,5}\]")


def bare(data: bytes) -> bytes:
    """A line's (or a chunk's) shape bytes: without hex addresses and digits."""
    if b"0x" in data:
        data = _HEX.sub(b"", data)
    return data.translate(None, _DIGITS)


def _rank_id(data: bytes) -> int:
    head = data[:RANK_SPAN]
    lead = _RANK_LEAD.match(head)
    return hash((lead[0] if lead else b"", *_RANK_WORD.findall(head.lower())[:4]))


class Storms:
    """Counts each line shape an input's selection emits and says which copies to skip."""

    __slots__ = ("counts", "rankish", "ranks", "dropped", "first", "run", "pending", "repeats")

    def __init__(self, repeats: dict | None = None) -> None:
        self.counts: dict[int, int] = {}
        self.rankish: dict[int, bool] = {}
        self.ranks: dict[int, set] = {}  # a rank-labelled shape's ranks, from its copies read
        # Copies skipped since the last one read, by shape; the next copy read (the storm's
        # end, in the tail) carries them in `repeats`, {lineno: copies}, so a trend counts
        # every retry, not only the ones read.
        self.pending: dict[int, int] = {}
        self.repeats = repeats if repeats is not None else {}
        self.dropped = 0
        self.first = 0  # the first line skipped
        self.run = 0    # lines skipped since the last one read

    def _allowance(self, shape: int) -> int:
        ranks = self.ranks.get(shape)
        return KEEP + PER_RANK * (len(ranks) - 1) if ranks else KEEP

    def claim(self, data: bytes, lineno: int, shape: int | None = None) -> None:
        """Line `lineno` is read: it carries the copies of its shape skipped before it."""
        if self.pending:
            copies = self.pending.pop(hash(bare(data)) if shape is None else shape, 0)
            if copies:
                self.repeats[lineno] = copies

    def keep(self, data: bytes, lineno: int) -> bool:
        """Whether line `lineno` (its bytes) is read, or is one copy too many of its shape."""
        line = bare(data)
        shape = hash(line)
        counts = self.counts
        n = counts.get(shape, 0) + 1
        if n == 1 and len(counts) >= MAX_SHAPES:
            # Thousands of distinct shapes: no storm among the rare ones; keep the frequent.
            counts = self.counts = {k: v for k, v in counts.items() if v >= 8}
            self.ranks = {k: v for k, v in self.ranks.items() if k in counts}
            self.rankish.clear()
        counts[shape] = n
        if n <= self._allowance(shape):
            rankish = self.rankish.get(shape)
            if rankish is None:
                rankish = self.rankish[shape] = _RANKISH.search(line) is not None
            if rankish:
                ranks = self.ranks.setdefault(shape, set())
                if len(ranks) < MAX_RANKS:
                    ranks.add(_rank_id(data))
            self.run = 0
            self.claim(data, lineno, shape)
            return True
        self._drop(shape, lineno)
        return False

    def _drop(self, shape: int, lineno: int) -> None:
        if not self.dropped:
            self.first = lineno
        self.dropped += 1
        self.run += 1
        self.pending[shape] = self.pending.get(shape, 0) + 1

    def spent(self, data: bytes, lineno: int = 0, peek: bool = False) -> bool:
        """Whether keep() would say no: the line's shape was read as often as it may be. Then,
        unless `peek`, the line is counted as skipped (and the prefilter reads nothing around
        it either); when it is not so, nothing is counted and keep() decides."""
        shape = hash(bare(data))
        n = self.counts.get(shape, 0)
        # Once a shape is read as often as it may be, it stays so: its allowance grows only
        # with the ranks of the copies read.
        if n < KEEP or n < self._allowance(shape):
            return False
        if not peek:
            self.counts[shape] = n + 1
            self._drop(shape, lineno)
        return True

    def all_spent(self, lines: list, first: int) -> bool:
        """Whether every one of `lines` (bytes; the first is line `first`) is a copy spent()
        says no to; if so, each is counted as skipped, as spent() would one by one."""
        # Counted by shape bytes at C speed (Counter), then hashed once per distinct shape:
        # a keyword-dense chunk's few hundred copies are a handful of shapes.
        counts, allowance = self.counts, self._allowance
        tally = {}
        for shape, n in Counter(bare(b"\n".join(lines)).split(b"\n")).items():
            h = hash(shape)
            tally[h] = tally.get(h, 0) + n
        if not all(counts.get(h, 0) >= allowance(h) for h in tally):
            return False
        pending = self.pending
        for h, n in tally.items():
            counts[h] += n
            pending[h] = pending.get(h, 0) + n
        if not self.dropped:
            self.first = first
        self.dropped += len(lines)
        self.run += len(lines)
        return True

    def covers(self, chunk: bytes) -> dict | None:
        """{shape: copies} of `chunk` (lines ending with a newline) when every line is a copy
        of a shape already read as often as it may be (then none of them needs reading);
        else None."""
        counts = self.counts
        # A cheap refusal first (most calls: a healthy chunk): the first line that is not
        # blank once bare must be a shape read as often as it may be. Past a few blank
        # lines the whole chunk is looked at below, which decides the same either way.
        pos = 0
        for _ in range(8):
            nl = chunk.find(b"\n", pos)
            shape = bare(chunk[pos:] if nl < 0 else chunk[pos:nl])
            if shape:
                h = hash(shape)
                if counts.get(h, 0) < self._allowance(h):
                    return None
                break
            if nl < 0:
                break
            pos = nl + 1
        shaped = bare(chunk)
        lines = shaped.split(b"\n")
        shapes = set(lines)
        shapes.discard(b"")  # blank lines (and the piece after the final newline) say nothing
        if not all(counts.get(h, 0) >= self._allowance(h) for h in map(hash, shapes)):
            return None
        if len(shapes) == 1:
            # One shape (most storms): every other line is blank, so each `shape\n` found
            # is one whole line, and counting them is exact.
            (shape,) = shapes
            return {hash(shape): shaped.count(shape + b"\n")}
        from collections import Counter
        return {hash(shape): n for shape, n in Counter(lines).items() if shape}

    def rest_is_storm(self, chunk: bytes, pos: int, stop: int) -> dict | None:
        """After RUN lines skipped in a row: covers(chunk[pos:stop]). Asked once per RUN
        skipped lines, so its cost stays small per line."""
        if self.run < RUN:
            return None
        self.run = 0
        return self.covers(chunk[pos:stop])

    def skipped(self, first: int, count: int, copies: dict) -> None:
        """Count `count` lines from line `first` on, `copies` of each shape (covers), as skipped."""
        pending = self.pending
        for key, n in copies.items():
            pending[key] = pending.get(key, 0) + n
        if not self.dropped:
            self.first = first
        self.dropped += count

    def warning(self, source: str) -> str | None:
        """The warning for an input that held a storm, or None.

        Fewer skipped lines are chatter (progress bars, per-step lines repeated past KEEP in
        the head), skipped as quietly as the prefilter skips any line it does not select."""
        if self.dropped < WARN:
            return None
        return (f"{source}: {self.dropped:,} lines from line {self.first:,} on repeated a line "
                f"already read {KEEP} times (digits aside) and were counted, not diagnosed")
