"""Stage 3d: trends — a run going bad over many lines, where no single line is the failure.

A rule with `trend: <kind>` matches the single lines as usual (its patterns capture the number
the trend follows), but its hits count only when the trend holds over the job; then one hit
stands for them all, with the first and last values in its facts.

loss_scale  fp16 dynamic loss scaling that keeps halving: DeepSpeed's `OVERFLOW! ... reducing
            to`, apex/amp's `Gradient overflow. Skipping step, ... reducing loss scale to`,
            fairseq's `overflow detected, setting loss scale to`. A few skips while the scale
            settles are healthy (every fp16 run starts that way); the run is collapsing when
            the scale has fallen to 1 or below, or when the log ends inside a run of at least
            STREAK reductions that has brought the scale down to LOW or below.
"""

from collections import deque

from classifier.diagnosis.match import Hit

TREND_KINDS = ("loss_scale",)
FLOOR = 1.0     # DeepSpeed's and apex's default min_loss_scale
LOW = 128.0
STREAK = 5
TAIL = 10       # "the log ends inside the run": its last overflow within this many lines


RECENT = 64     # hits of a trend kept per input beyond the first (bounded memory)


def _scale(hit: Hit) -> float | None:
    try:
        return float(hit.facts.get("scale", ""))
    except ValueError:
        return None


class TrendHits:
    """The line hits of trend rules, per rule and input: the first, the lowest value, the last."""

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], dict] = {}

    def add(self, hit: Hit) -> None:
        """Record one line hit of a trend rule."""
        value = _scale(hit)
        if value is None:
            return
        key = (hit.rule.id, hit.first.source)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = {"rule": hit.rule, "first": (hit, value), "min": value,
                                          "count": 0, "recent": deque(maxlen=RECENT)}
        series["min"] = min(series["min"], value)
        series["count"] += 1
        series["recent"].append((hit, value))

    def hits(self, last_lineno: dict[str, int]) -> list[Hit]:
        """One hit per rule and input where the trend holds."""
        out = []
        for (_, source), s in self._series.items():
            if s["rule"].trend != "loss_scale":
                continue
            recent = list(s["recent"])
            values = [v for _, v in recent]
            streak = 1
            for a, b in zip(values, values[1:]):
                streak = streak + 1 if b < a else 1
            last_hit, last_value = recent[-1]
            ends_inside = last_hit.lines[-1].lineno + TAIL >= last_lineno.get(source, 0)
            if s["min"] <= FLOOR or (ends_inside and streak >= STREAK and last_value <= LOW):
                first_hit, first_value = s["first"]
                facts = {"first_scale": f"{first_value:g}", "last_scale": f"{last_value:g}",
                         "min_scale": f"{s['min']:g}", "overflows": str(s["count"])}
                lines = [first_hit.first] + ([last_hit.first] if last_hit is not first_hit else [])
                out.append(Hit(s["rule"], lines, facts))
        return out
