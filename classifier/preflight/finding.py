"""What `dsdiag check-config` and `dsdiag env` share: findings, did-you-mean, exit codes.

Both commands report problems *before* a job runs, in the same category ids as the log
diagnosis (classifier/taxonomy.py), so a finding here and a failure in a log read alike.
"""

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from classifier.taxonomy import layer_of

# Exit codes: the grep/ripgrep contract the log diagnosis also keeps.
EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2

# error: a consumer fails (DeepSpeed stops, json.load raises...);
# warning: it runs, but not as written (a section silently ignored, a likely OOM);
# note: worth knowing, not a problem (a default applied, a check that could not run).
SEVERITIES = ("error", "warning", "note")


@dataclass(slots=True)
class Finding:
    category: str
    severity: str
    message: str
    fix: str = ""
    line: int = 0
    col: int = 0
    key: str = ""
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def is_problem(self) -> bool:
        """Whether this is an error or a warning (not a note)."""
        return self.severity in ("error", "warning")

    def to_json(self) -> dict[str, object]:
        """The finding as a JSON-ready dict, with the taxonomy layer of its category."""
        out = asdict(self)
        out["layer"] = layer_of(self.category)
        return out


def did_you_mean(word: str, candidates: Iterable[object]) -> str | None:
    """The one candidate a typo most likely meant, or None.

    Case-insensitive equality first, then a very close spelling, then the one candidate that
    starts with or contains the word (`zero_opt` -> `zero_optimization`), then a looser match.
    """
    candidates = [c for c in candidates if isinstance(c, str)]
    lowered = {c.lower(): c for c in candidates}
    word_l = word.lower()
    if word_l in lowered:
        return lowered[word_l]
    close = difflib.get_close_matches(word_l, list(lowered), n=1, cutoff=0.8)
    if close:
        return lowered[close[0]]
    if len(word) >= 4:
        for test in (lambda c: c.startswith(word_l), lambda c: word_l in c):
            hits = [lowered[c] for c in lowered if test(c)]
            if len(hits) == 1:
                return hits[0]
    close = difflib.get_close_matches(word_l, list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def exit_code(findings: Iterable[Finding]) -> int:
    """EXIT_PROBLEMS when any finding is an error or warning, else EXIT_CLEAN."""
    return EXIT_PROBLEMS if any(f.is_problem for f in findings) else EXIT_CLEAN


def count_line(findings: Sequence[Finding]) -> str:
    """The summary line: 'N problems (E errors, W warnings), K notes' or 'no problems'."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    notes = sum(f.severity == "note" for f in findings)
    if not errors and not warnings:
        head = "no problems"
    else:
        head = f"{errors + warnings} problem{'s' * (errors + warnings != 1)} " \
               f"({errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)})"
    return head + (f", {notes} note{'s' * (notes != 1)}" if notes else "")
