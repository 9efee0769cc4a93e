"""The backtracking lint: every regex a rule file holds is tried on inputs built to make a
backtracking engine blow up, and a pattern that takes too long is refused at load time."""

from collections.abc import Callable, Iterable, Sequence

import regex

# Inputs that make a backtracking regex blow up: long runs of one character (the pattern's own
# literals among them), with and without a character that makes the match fail at the end.
# A quadratic pattern is cheap on short lines and hangs on long ones, so the runs are as long
# as the longest text a rule is ever shown (normalize.MATCH_LIMIT).
ADVERSARIAL_LENGTH = 3 * 8192  # a three-line window of MATCH_LIMIT lines
BACKTRACK_BUDGET = 0.25  # seconds one search may take on an adversarial input


SAMPLE_RUNS = "a0/. "  # run characters put in front of a rule's own example lines
MAX_SAMPLES = 2


def adversarial_inputs(pattern: str, keywords: Sequence[str] = (),
                       samples: Sequence[str] = ()) -> list[str]:
    """Strings built to expose catastrophic backtracking in `pattern` (gated by `keywords`).

    `samples` are lines the pattern is meant to match (the rule's examples): a long run in
    front of one makes every start position scan to the message and fail, which is how a
    pattern that opens with an unanchored `[\\w./]*` goes quadratic on a real-looking line.
    """
    chars = {"a", "0", " ", ".", "/", ":", "-", "_", "'", "\t"}
    chars.update(c for c in pattern if c.isalnum())
    # The pattern's own words in front of the run defeat the engine's required-literal
    # shortcut, as a line that passed the keyword gate would.
    phrase = " ".join(regex.findall(r"[A-Za-z_]{2,}", pattern))[:400]
    out = []
    for c in sorted(chars):
        run = c * ADVERSARIAL_LENGTH
        out.extend((run, run + "\x00", "x" + run + "!"))
        if phrase:
            out.extend((phrase + " " + run, run + " " + phrase))
        # a line that passes the rule's own keyword gate, then the run
        out.extend(text for kw in keywords for text in (kw + " " + run, run + " " + kw))
    if phrase:
        out.append((phrase + " ") * (ADVERSARIAL_LENGTH // max(1, len(phrase))))
    for sample in list(samples)[:MAX_SAMPLES]:
        out.extend(c * ADVERSARIAL_LENGTH + sample for c in SAMPLE_RUNS)
    return out


def backtracking_problem(compiled: regex.Pattern[str], keywords: Sequence[str] = (),
                         samples: Sequence[str] = ()) -> str | None:
    """Return a reason if the compiled pattern is too slow on an adversarial input, else None."""
    for text in adversarial_inputs(compiled.pattern, keywords, samples):
        try:
            compiled.search(text, timeout=BACKTRACK_BUDGET)
        except TimeoutError:
            return (f"pattern may backtrack catastrophically (over {BACKTRACK_BUDGET}s on "
                    f"{len(text)} chars of {text[:1]!r}); make quantifiers possessive or "
                    "bound them")
    return None


def check_regexes(values: Iterable[str] | None, where: tuple[str | int, ...],
                  report: Callable[[tuple[str | int, ...], str], None],
                  keywords: Sequence[str] = (), samples: Sequence[str] = ()) -> None:
    """Report each pattern of `values` that does not compile or backtracks badly."""
    for i, pattern in enumerate(values or ()):
        try:
            compiled = regex.compile(pattern)
        except regex.error as exc:
            report(where + (i,), f"bad regex: {exc}")
            continue
        problem = backtracking_problem(compiled, keywords, samples)
        if problem:
            report(where + (i,), problem)
