"""Storms of one line: the copies past the first few hundred are counted, not diagnosed.

A job that dies in a retry loop prints one warning a hundred thousand times (c10d's "client
socket has failed to connect", a traceback re-raised in a loop, a loader's retry). Each copy
the prefilter passes on costs ~20-100 us downstream, so such a log took 70x the time of a
normal one of its size, and every copy after the first few hundred tells nothing new. Lines
are grouped by shape: the bytes without their digits (ports, steps, addresses and counters
differ from copy to copy), and for a line that names its rank or process (`[rank3]:`,
`[Rank 3]`, `node-1:4242:4300 [3]`, `3: `) its rank tokens too, so a timeout that 4,096 ranks
each report once is 4,096 shapes, not one storm. The last TAIL lines of an input are always
read (the storm's end is where the failure is).
"""

import re

KEEP = 512            # copies of one shape read per input; later ones are counted only
WARN = 10_000         # skipped lines that make a storm worth a warning (fewer: chatter)
RUN = 4096            # lines skipped in a row before the rest of a chunk is looked at whole
MAX_SHAPES = 1 << 16  # shapes remembered at once (bounded memory: hashes, not lines)
_DIGITS = b"0123456789"
# On a shape (digits gone): does the line carry a rank or process label?
_RANKISH = re.compile(rb"(?i)rank|default|worker|trainer|^\s*:|^\[,\]<|^[\w.-]{1,253}:: \[\]")
# Bounded: a key holds these tokens, and a garbled line must not make a key kilobytes long.
_RANK_ID = re.compile(rb"(?i)(?:rank|default|worker|trainer)\D{0,3}\d{1,9}|^\s{0,8}\d{1,9}:"
                      rb"|^\[\d{1,9},\d{1,9}\]|^[\w.-]{1,253}:\d{1,10}:\d{1,10} \[\d{1,5}\]")


class Storms:
    """Counts each line shape an input's selection emits and says which copies to skip."""

    __slots__ = ("counts", "rankish", "dropped", "first", "run", "pending", "repeats")

    def __init__(self, repeats: dict | None = None) -> None:
        self.counts: dict = {}
        # Copies skipped since the last one read, by shape; the next copy read (the storm's
        # end, in the tail) carries them in `repeats`, {lineno: copies}, so a trend counts
        # every retry, not only the ones read.
        self.pending: dict = {}
        self.repeats = repeats if repeats is not None else {}
        self.rankish: dict[int, bool] = {}
        self.dropped = 0
        self.first = 0  # the first line skipped
        self.run = 0    # lines skipped since the last one read

    def _key(self, data):
        shape = hash(data.translate(None, _DIGITS))
        rankish = self.rankish.get(shape)
        if rankish is None:
            if len(self.rankish) >= MAX_SHAPES:
                self.rankish.clear()
            rankish = self.rankish[shape] = _RANKISH.search(data.translate(None, _DIGITS)) is not None
        # A hash, not the tokens: every key is one int, whatever the line holds.
        return hash((shape, *_RANK_ID.findall(data)[:4])) if rankish else shape

    def claim(self, data: bytes, lineno: int, key=None) -> None:
        """Line `lineno` is read: it carries the copies of its shape skipped before it."""
        if self.pending:
            copies = self.pending.pop(self._key(data) if key is None else key, 0)
            if copies:
                self.repeats[lineno] = copies

    def keep(self, data: bytes, lineno: int) -> bool:
        """Whether line `lineno` (its bytes) is read, or is one copy too many of its shape."""
        key = self._key(data)
        counts = self.counts
        n = counts.get(key, 0) + 1
        if n == 1 and len(counts) >= MAX_SHAPES:
            # Thousands of distinct shapes: no storm among the rare ones; keep the frequent.
            counts = self.counts = {k: v for k, v in counts.items() if v >= 8}
        counts[key] = n
        if n <= KEEP:
            self.run = 0
            self.claim(data, lineno, key)
            return True
        if not self.dropped:
            self.first = lineno
        self.dropped += 1
        self.pending[key] = self.pending.get(key, 0) + 1
        self.run += 1
        return False

    def covers(self, chunk: bytes) -> dict | None:
        """{shape: copies} of `chunk` (lines ending with a newline) when every line is a copy
        of a shape already read KEEP times, none with a rank label (then none of them needs
        reading); else None."""
        from collections import Counter
        copies = Counter(chunk.translate(None, _DIGITS).split(b"\n"))
        copies.pop(b"", None)  # blank lines (and the piece after the final newline) say nothing
        counts, rankish = self.counts, self.rankish
        by_key = {hash(shape): n for shape, n in copies.items()}
        if all(rankish.get(h) is False and counts.get(h, 0) >= KEEP for h in by_key):
            return by_key
        return None

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
