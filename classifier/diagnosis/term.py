"""A failure-vocabulary term: a regex on a normalised line and the gates the prefilter selects with."""

import re
from collections import namedtuple


class Term(namedtuple("Term", "pattern gates gate_pattern raw gate_needs scan",
                      defaults=((), None, "", (), ()))):
    """A regex and what every line it matches must contain: literals, or a lower-case regex
    (and `gate_needs`, literals of which every line that regex matches holds one).

    `scan`, for a `raw` that Hyperscan would run as an automaton over every byte (no literal
    to start from), are literal-led regexes of which every line `raw` matches matches one;
    Hyperscan looks for those instead and checks `raw` on the few lines they find."""

    __slots__ = ()

    @property
    def raw_gate(self) -> str:
        """The raw-line gate: `raw`, or the literal gates matched as written, case-insensitive."""
        return self.raw or "(?i:" + "|".join(re.escape(g) for g in self.gates) + ")"
