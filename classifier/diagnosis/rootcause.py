"""Stage 4: pick the root cause among all hits of a job.

A failing job prints its cause once and its echoes on every other rank. Any `cause` hit beats
every `symptom` hit; among causes the one that happened first wins (timestamps across files,
position within a file), preferring the rank torchelastic names as the first observed failure.
Symptoms decide only when no cause fired anywhere: highest priority, then earliest.

A terminal category (taxonomy.TERMINAL: the scheduler ended the job) is a symptom that yields
to any failure before it: a job that ran out of memory, or whose collective hung until the time
limit, died of that, not of the cancel. A cause anywhere still wins (a requeued attempt
appended to the same file may fail for a reason of its own).
"""

from collections.abc import Iterable, Sequence
from functools import cmp_to_key

from classifier.taxonomy import TERMINAL

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.match import Hit
    from classifier.diagnosis.normalize import Line

MAX_EVIDENCE = 8
KEEP_PER_RULE = 64


def _compare(a, b):
    """Order two lines by when they happened: position within a file, time across files."""
    if a.index == b.index:
        return (a.lineno > b.lineno) - (a.lineno < b.lineno)
    if a.ts is not None and b.ts is not None and a.ts != b.ts:
        return -1 if a.ts < b.ts else 1
    return -1 if a.index < b.index else 1


line_order = cmp_to_key(_compare)


def _hit_key(hit):
    return line_order(hit.first)


class HitCollector:
    """Keeps a bounded number of hits per rule, plus how often each rule fired."""

    def __init__(self) -> None:
        self.hits = []
        self.counts = {}

    def add(self, hit: "Hit") -> None:
        """Record one hit; beyond KEEP_PER_RULE per rule only the count grows."""
        n = self.counts.get(hit.rule.id, 0)
        self.counts[hit.rule.id] = n + 1
        if n < KEEP_PER_RULE:
            self.hits.append(hit)


def _after(line, end) -> bool:
    """Did `line` surely come after `end`? Same file and later, or both timed and later."""
    if line.source == end.source:
        return line.lineno > end.lineno
    return line.ts is not None and end.ts is not None and line.ts > end.ts


# What a peer prints when the rank it was talking to went away: a lost connection, a wait that
# ran out. Such a line is the echo of whatever ended that rank first.
PEER_ECHO_CATEGORIES = frozenset({"connection_failure", "nccl_timeout"})


def _echoes_of_stopped_root(symptoms, ends, root_rank):
    """The peers' lost connections when the scheduler's end is the first failure itself.

    torchelastic names the rank that ended first (`Root Cause (first observed failure)`); when
    an end hit reads that rank's own stop (`failed (exitcode: -15) local_rank: 0`, its SIGTERM
    in the summary), another rank's `Connection closed by peer` printed before the launcher
    noticed is that stop's echo, not a failure before the end (probe 60a: SIGTERM to one worker
    of torchrun, its peer in an all_reduce).
    """
    if root_rank is None or not any(_names_rank(e, root_rank) for e in ends):
        return set()
    return {id(h) for h in symptoms if h.rule.category in PEER_ECHO_CATEGORIES
            and h.first.rank is not None and h.first.rank != root_rank}


def _names_rank(hit, rank) -> bool:
    """Is `hit` about that rank: one of its lines is labelled with it, or it captured it as the
    local rank (the agent's `local_rank: N`; one node, so local and global agree)?"""
    return any(line.rank == rank for line in hit.lines) or \
        str(hit.facts.get("local_rank", "")) == str(rank)


def _yield_to_earlier_failures(symptoms, root_rank=None):
    """The symptoms that may decide: a failure echoed before the scheduler's end beats the end."""
    ends = [h for h in symptoms if h.rule.category in TERMINAL and h.rule.priority >= 0]
    if not ends:
        return symptoms
    end = min(ends, key=_hit_key).first
    echoes = _echoes_of_stopped_root(symptoms, ends, root_rank)
    earlier = [h for h in symptoms if h.rule.category not in TERMINAL and h.rule.priority >= 0
               and not _after(h.first, end) and id(h) not in echoes]
    # Nothing failed before the end: what follows it (tasks reported Killed) is the end's echo.
    return earlier or [h for h in symptoms if id(h) not in echoes and
                       (h.rule.category in TERMINAL or not _after(h.first, end))]


def pick_root_cause(hits: Sequence["Hit"], root_rank: int | None = None) -> "Hit | None":
    """Return the winning hit, or None when nothing fired."""
    causes = [h for h in hits if h.rule.role == "cause"]
    if causes:
        if root_rank is not None:
            on_root = [h for h in causes if h.first.rank == root_rank]
            causes = on_root or causes
        return min(causes, key=_hit_key)
    if not hits:
        return None
    hits = _yield_to_earlier_failures(hits, root_rank)
    top = max(h.rule.priority for h in hits)
    return min((h for h in hits if h.rule.priority == top), key=_hit_key)


def evidence_of(hits: Iterable["Hit"]) -> list["Line"]:
    """Evidence lines for a group of hits: the first hit first, then one line per other place."""
    out, seen = [], set()
    for hit in hits:
        for line in hit.lines:
            key = (line.source, line.lineno)
            if key in seen:
                continue
            seen.add(key)
            out.append(line)
            if len(out) >= MAX_EVIDENCE:
                return out
    return out


def group_by_category(hits: Iterable["Hit"],
                      winner: "Hit | None") -> list[tuple[str, list["Hit"]]]:
    """Return [(category, hits)] with the winner's category first, the rest by first hit."""
    groups = {}
    for hit in sorted(hits, key=_hit_key):
        groups.setdefault(hit.rule.category, []).append(hit)
    if winner is not None:
        own = groups.pop(winner.rule.category)
        own.remove(winner)
        return [(winner.rule.category, [winner] + own)] + list(groups.items())
    return list(groups.items())


# How one hit was read (its message cut, the frame it was raised in, the statement its message
# came from), not a value of the failure: only the first hit's count.
OWN_FACTS = frozenset({"message_cut", "raised_in", "raise_statement"})


def merged_facts(hits: Iterable["Hit"]) -> dict[str, str]:
    """Merge the captured values of several hits; the first hit's value wins."""
    facts = {}
    for i, hit in enumerate(hits):
        for key, value in hit.facts.items():
            if i == 0 or key not in OWN_FACTS:
                facts.setdefault(key, value)
    return facts
