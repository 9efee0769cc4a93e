"""Stage 3d: trends — a run going bad over many lines, where no single line is the failure.

A rule with `trend: <kind>` matches the single lines as usual (its patterns capture the number
or code the trend follows), but its hits count only when the trend holds over the job; then
one hit stands for them all, with the trend's numbers in its facts.

loss_scale  fp16 dynamic loss scaling that keeps halving: DeepSpeed's `OVERFLOW! ... reducing
            to`, apex/amp's `Gradient overflow. Skipping step, ... reducing loss scale to`,
            fairseq's `overflow detected, setting loss scale to`. A few skips while the scale
            settles are healthy (every fp16 run starts that way); the run is collapsing when
            the scale has fallen to 1 or below, or when the log ends inside a run of at least
            STREAK reductions that has brought the scale down to LOW or below.
loss_scale_log  the same read from a scale that is logged every step, overflow or not (a
            `loss_scale:` column, a logger's parameter): it counts only once the values fell.
events      a hardware event that is noise once and a fault when it repeats (driver Xids that
            no single-line rule calls fatal): at least EVENTS hits in the job. The facts list
            every code seen (`xid_codes`), the first code and device, and how many events.
retries     a connection retried again and again (NCCL's `Call to connect returned ...,
            retrying`): at least RETRIES retries that end in a failure — a line the rule
            captures as `gave_up` (an NCCL WARN) within GAP lines of a retry, or the log
            ending inside the storm. Retries that go quiet and never fail are a slow start, not a fault.
"""

from collections import deque

from classifier.diagnosis.match import Hit
from classifier.numbers import finite_float

TREND_KINDS = ("loss_scale", "loss_scale_log", "events", "retries")
SCALES = ("loss_scale", "loss_scale_log")
FLOOR = 1.0     # DeepSpeed's and apex's default min_loss_scale
LOW = 128.0
STREAK = 5
TAIL = 10       # "the log ends inside the run": its last hit within this many lines
EVENTS = 3
RETRIES = 5
RETRY_TAIL = 2   # a storm the paste ends in: its last retry is (nearly) the last line
GAP = 50         # lines between the last retry and the WARN that ends the storm
MAX_VALUES = 16  # distinct codes / devices kept per series (bounded memory)

RECENT = 64     # hits of a trend kept per input beyond the first (bounded memory)


def _scale(hit: Hit) -> float | None:
    scale = hit.facts.get("scale", "")
    return finite_float(scale) if isinstance(scale, str) else None


class _Series:
    """The hits of one trend rule in one input: first, last, count, and what they carried."""

    __slots__ = ("rule", "first", "last", "count", "min", "recent", "values", "gave_up")

    def __init__(self, rule, hit: Hit) -> None:
        self.rule = rule
        self.first = self.last = hit
        self.count = 0
        self.min = None
        self.recent = deque(maxlen=RECENT)
        self.values: dict[str, list[str]] = {}
        self.gave_up: Hit | None = None


class TrendHits:
    """The line hits of trend rules, per rule and input, reduced to what each trend needs."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], _Series] = {}
        # {source: {line number: copies}}: the copies of a line the prefilter skipped before
        # reading it (storms.py); a trend counts them as its own.
        self.repeats: dict[str, dict[int, int]] = {}

    def add(self, hit: Hit) -> None:
        """Record one line hit of a trend rule."""
        kind = hit.rule.trend
        value = _scale(hit) if kind in SCALES else None
        if kind in SCALES and value is None:
            return
        key = (hit.rule.id, hit.first.source)
        s = self._series.get(key)
        if kind == "retries" and hit.facts.get("gave_up") is not None:
            # The failure that ends a storm counts only right after a retry: a WARN hours later
            # belongs to another failure.
            if (s is not None and s.gave_up is None
                    and hit.first.lineno - s.last.lines[-1].lineno <= GAP):
                s.gave_up = hit
            return
        if s is None:
            s = self._series[key] = _Series(hit.rule, hit)
            s.min = value
        s.count += 1 + self.repeats.get(hit.first.source, {}).get(hit.first.lineno, 0)
        s.last = hit
        if kind in SCALES:
            s.min = min(s.min, value)
            s.recent.append((hit, value))
            return
        for name, val in hit.facts.items():
            seen = s.values.setdefault(name, [])
            if val and val not in seen and len(seen) < MAX_VALUES:
                seen.append(val)

    def hits(self, last_lineno: dict[str, int]) -> list[Hit]:
        """One hit per rule and input where the trend holds."""
        out = []
        for (_, source), s in self._series.items():
            kind = s.rule.trend
            tail = RETRY_TAIL if kind == "retries" else TAIL
            ends_inside = s.last.lines[-1].lineno + tail >= last_lineno.get(source, 0)
            if kind in SCALES:
                hit = _loss_scale(s, ends_inside, kind == "loss_scale_log")
            elif kind == "events":
                hit = _events(s) if s.count >= EVENTS else None
            else:
                hit = _retries(s) if s.count >= RETRIES and (s.gave_up or ends_inside) else None
            if hit is not None:
                out.append(hit)
        return out


def _lines(*hits: Hit | None) -> list:
    out = []
    for hit in hits:
        if hit is not None and hit.first not in out:
            out.append(hit.first)
    return out


def _loss_scale(s: _Series, ends_inside: bool, must_fall: bool = False) -> Hit | None:
    # Two ranks' lines interleaved print each scale twice, one line apart (16, 8, 16, 4, 8):
    # a value met just before the previous one is the other rank's copy, not a recovery.
    values = []
    for _, v in s.recent:
        if not (len(values) >= 2 and v == values[-2] and v != values[-1]):
            values.append(v)
    streak = 1
    for a, b in zip(values, values[1:]):
        # Several ranks each report the same reduction (and DeepSpeed's hysteresis repeats a
        # scale): an equal value neither extends nor breaks the run.
        if b != a:
            streak = streak + 1 if b < a else 1
    # A logged scale (a column, a parameter) is no overflow by itself: it must have fallen.
    if must_fall and not any(b < a for a, b in zip(values, values[1:])):
        return None
    last_hit, last_value = s.recent[-1]
    if not (s.min <= FLOOR or (ends_inside and streak >= STREAK and min(last_value, values[-1]) <= LOW)):
        return None
    first_value = _scale(s.first)
    facts = {"first_scale": f"{first_value:g}", "last_scale": f"{last_value:g}",
             "min_scale": f"{s.min:g}", "overflows": str(s.count)}
    return Hit(s.rule, _lines(s.first, last_hit), facts)


def _first_values(s: _Series) -> dict[str, str]:
    return {name: vals[0] for name, vals in s.values.items() if vals}


def _events(s: _Series) -> Hit:
    facts = _first_values(s)
    # every distinct value as `<name>_codes` (`xid_codes: "109, 8"`); the name alone keeps the
    # first, so a fact keeps one type whether a rule saw it once or as a trend
    facts.update({f"{name}_codes": ", ".join(vals) for name, vals in s.values.items()
                  if len(vals) > 1 or name == "xid"})
    facts["events"] = str(s.count)
    return Hit(s.rule, _lines(s.first, s.last), facts)


def _retries(s: _Series) -> Hit:
    facts = _first_values(s)
    facts["retries"] = str(s.count)
    if s.gave_up is not None:
        facts["gave_up"] = s.gave_up.facts["gave_up"]
    return Hit(s.rule, _lines(s.first, s.last, s.gave_up), facts)
