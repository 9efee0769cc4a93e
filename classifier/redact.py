"""Secrets out of every report that leaves the terminal.

Job logs carry credentials: launchers echo the environment (`export WANDB_API_KEY=...` in
DeepSpeed's pdsh command line, `print(os.environ)`), libraries quote URLs with passwords, and a
key file read by mistake ends up in a traceback. A diagnosis quotes log lines, and Slurm
comments, sidecars and Kubernetes termination messages are readable by other users, so every
string of the diagnosis passes through here before it is written anywhere but a terminal.

The patterns are data (`redaction.yaml`, each with match / no-match examples that the test
suite runs). This module applies them to text, to consecutive log lines (a PEM block spans
lines: its body lines carry no marker of their own) and to a whole diagnosis dict.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from classifier.precompiled import re_compile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any

PATTERNS_FILE = os.path.join(os.path.dirname(__file__), "redaction.yaml")
_PEM_BEGIN = re_compile(r"-----BEGIN (?P<kind>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re_compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


class Pattern:
    """One secret shape: its id (the label), compiled regex, replacement and examples.

    Without `replace`, the named group `secret` (else the whole match) becomes
    `[REDACTED:<id>]` and the rest of the match is kept; with `entropy`, a secret whose
    characters carry fewer bits each than that is left alone (a word, not a key).
    """

    __slots__ = ("id", "title", "source", "_regex", "replace", "entropy", "keywords", "examples")

    def __init__(self, entry: dict[str, Any]) -> None:
        self.id = entry["id"]
        self.title = entry.get("title", "")
        self.source = entry["regex"]
        self._regex = None
        self.replace = entry.get("replace")
        self.entropy = entry.get("entropy")
        # Lower-case literals one of which every match contains (gitleaks' keywords): the
        # regex runs only on text holding one.
        self.keywords = tuple(entry.get("keywords") or ())
        self.examples = entry.get("examples") or {}

    @property
    def regex(self) -> re.Pattern:
        """The compiled regex; compiled on first use, as most never meet their keywords."""
        if self._regex is None:
            self._regex = re_compile(self.source)
        return self._regex

    def _masked(self, m: re.Match) -> str:
        start, end = m.span("secret") if "secret" in self.regex.groupindex and \
            m.group("secret") is not None else m.span()
        secret = m.string[start:end]
        if self.entropy is not None and shannon_entropy(secret) < self.entropy:
            return m.group()
        return m.string[m.start():start] + f"[REDACTED:{self.id}]" + m.string[end:m.end()]

    def sub(self, text: str, lowered: str | None = None) -> str:
        """Return `text` with this pattern's matches replaced (`lowered`: text.lower(), if known)."""
        if self.keywords:
            lowered = text.lower() if lowered is None else lowered
            if not any(k in lowered for k in self.keywords):
                return text
        if self.replace:
            return self.regex.sub(self.replace, text)
        return self.regex.sub(self._masked, text)


def shannon_entropy(text: str) -> float:
    """Bits per character of `text` (random base64 about 5-6, English words below 3.5)."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@lru_cache(maxsize=None)
def load_patterns(path: str | os.PathLike = PATTERNS_FILE) -> tuple[Pattern, ...]:
    """Load and compile the redaction patterns (once per process; parsed YAML is cached on disk
    by the file's bytes, so a run from the cache imports no yaml)."""
    from classifier.rules.cache import cache_key, read_cached, write_cached
    with open(path, "rb") as fh:
        raw = fh.read()
    key = cache_key(raw)
    data = read_cached("redaction", key, binary=True)
    if not isinstance(data, dict) or not isinstance(data.get("patterns"), list):
        from classifier.rules.safeyaml import safe_load_bounded
        data = safe_load_bounded(raw.decode("utf-8"))
        write_cached("redaction", key, data, binary=True)
    return tuple(Pattern(entry) for entry in data["patterns"])


@lru_cache(maxsize=8)
def _keyword_gates(patterns: tuple[Pattern, ...]) -> tuple[tuple[str, ...], tuple]:
    """Every keyword of `patterns` once, and each pattern's keywords as a set (None: no gate)."""
    keywords = tuple(dict.fromkeys(k for p in patterns for k in p.keywords))
    return keywords, tuple(frozenset(p.keywords) if p.keywords else None for p in patterns)


def redact_text(text: str, patterns: Sequence[Pattern] | None = None) -> str:
    """Return `text` with every secret replaced by `[REDACTED:<pattern id>]`."""
    if not text:
        return text
    default = load_patterns()
    if (patterns is None or patterns is default) and len(text) <= _MEMO_TEXT:
        return _redact_default(text)
    return _redact(text, tuple(patterns or default))


_MEMO_TEXT = 512  # titles, steps and short evidence repeat from job to job in a triage


@lru_cache(maxsize=4096)
def _redact_default(text: str) -> str:
    return _redact(text, load_patterns())


def _redact(text: str, patterns: tuple[Pattern, ...]) -> str:
    keywords, gates = _keyword_gates(patterns)
    # Which keywords the text holds, asked once rather than once per pattern: most texts hold
    # none, and every string of a diagnosis passes here.
    lowered = text.lower()
    present = {k for k in keywords if k in lowered}
    for pattern, gate in zip(patterns, gates):
        if gate is not None and present.isdisjoint(gate):
            continue
        changed = pattern.sub(text, lowered)
        if changed is not text:
            text, lowered = changed, changed.lower()
            present = {k for k in keywords if k in lowered}
    return text


def redact_lines(texts: Iterable[str], patterns: Sequence[Pattern] | None = None) -> list[str]:
    """Redact consecutive log lines; lines inside a PEM private-key block are dropped whole.

    A block's BEGIN line is redacted by its pattern; its base64 body lines and the END line
    follow as separate lines and are replaced here, since nothing in them alone says "key".
    A secret hard-wrapped over two lines (a terminal or `fold` cutting at column 80) is found
    on the pair joined and masked on both sides of the cut.
    """
    texts = list(texts)
    out = []
    in_pem = []
    inside = False
    for text in texts:
        in_pem.append(inside)
        if inside:
            out.append("[REDACTED:pem-private-key]")
            inside = not _PEM_END.search(text)
            continue
        begin = _PEM_BEGIN.search(text)
        inside = bool(begin) and not _PEM_END.search(text, begin.end())
        out.append(redact_text(text, patterns))
    rejoined = set()
    for i in range(len(texts) - 1):
        if in_pem[i] or in_pem[i + 1]:
            continue
        pair = _redact_wrapped(texts[i], texts[i + 1], patterns)
        if pair is None:
            continue
        out[i] = pair[0] if i not in rejoined else _mask_whole(out[i], pair[0])
        out[i + 1] = pair[1]
        rejoined.add(i + 1)
    return out


WRAP_MIN = 40  # a line cut by a hard wrap is long; short lines are ended, not cut
_MARKER = re_compile(r"\[REDACTED:[a-z0-9-]+\]")
# A cut runs through a secret only where token characters meet on both sides of it, and the
# run they make holds a digit (random keys do; words split by a line end do not).
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_CUT_HEAD = re_compile(r"[A-Za-z0-9+/=_-]{4,}")
_DIGIT = re_compile(r"[0-9]")


def _cut_tail(a: str) -> str:
    """The run of 4+ token characters `a` ends with (before one final newline, as `$` reads
    it), or "". Not `[...]{4,}$`: that search scans a long run again from each of its
    characters, quadratic (0.25 s on an 8 K line)."""
    body = a[:-1] if a.endswith("\n") else a
    run = body[len(body.rstrip(_TOKEN_CHARS)):]
    return run if len(run) >= 4 else ""


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _redact_wrapped(a: str, b: str, patterns) -> tuple[str, str] | None:
    """(a, b) redacted as the halves of one line cut between them, or None when the join
    reveals nothing that each half alone does not."""
    if len(a) < WRAP_MIN:
        return None
    tail, head = _cut_tail(a), _CUT_HEAD.match(b)
    if not (tail and head and _DIGIT.search(tail + head.group())):
        return None
    joined = a + b
    red = redact_text(joined, patterns)
    if red == redact_text(a, patterns) + redact_text(b, patterns):
        return None
    head = min(_common_prefix(joined, red), len(a))
    tail = min(_common_prefix(joined[::-1], red[::-1]), len(b), len(red) - head)
    middle = red[head:len(red) - tail]
    if tail >= len(b):  # the change lies in `a`; `b` only gave it context
        return red[:len(red) - len(b)], redact_text(b, patterns)
    if head >= len(a):  # the change lies in `b`; `a` named what it is (`token=` at the cut)
        return redact_text(a, patterns), red[len(a):]
    marker = _MARKER.search(middle)
    label = marker.group() if marker else "[REDACTED:wrapped]"
    return redact_text(a[:head], patterns) + middle, label + redact_text(b[len(b) - tail:], patterns)


def _mask_whole(current: str, other: str) -> str:
    """A line changed by both of its neighbours' joins: keep what each masked by masking all."""
    return current if current == other else "[REDACTED:wrapped]"


def _redact_evidence(evidence, patterns):
    """Redact a list of {file, line, rank, text}, carrying PEM state across adjacent lines."""
    out = []
    run = []  # indices of a run of adjacent lines of one file

    def flush():
        texts = redact_lines([evidence[i]["text"] for i in run], patterns)
        for i, text in zip(run, texts):
            out[i]["text"] = text
        run.clear()

    for i, ev in enumerate(evidence):
        item = {key: _redact_value(value, patterns) if key != "text" else value
                for key, value in ev.items()}
        out.append(item)
        prev = evidence[run[-1]] if run else None
        if prev is not None and not (prev.get("file") == ev.get("file")
                                     and isinstance(ev.get("line"), int)
                                     and ev.get("line") == (prev.get("line") or 0) + 1):
            flush()
        run.append(i)
    if run:
        flush()
    return out


def _redact_value(value, patterns):
    if isinstance(value, str):
        return redact_text(value, patterns)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "text" in v for v in value):
            return _redact_evidence(value, patterns)
        return [_redact_value(v, patterns) for v in value]
    if isinstance(value, dict):
        return {key: _redact_value(v, patterns) for key, v in value.items()}
    return value


def redact_diagnosis(diagnosis: dict[str, Any],
                     patterns: Sequence[Pattern] | None = None) -> dict[str, Any]:
    """Return a redacted copy of a diagnosis dict; the input is left untouched.

    _redact_value builds every dict and list anew, so no deep copy is made first."""
    patterns = patterns or load_patterns()
    return _redact_value(diagnosis, patterns)


def example_cases(
    patterns: Sequence[Pattern] | None = None,
) -> Iterator[tuple[str, Pattern, str, str, str | None]]:
    """Yield (test_id, pattern, kind, text, secret) for every example of every pattern."""
    for pattern in patterns or load_patterns():
        for kind in ("match", "no_match"):
            for i, item in enumerate(pattern.examples.get(kind) or ()):
                text, secret = (item, None) if isinstance(item, str) else (item["text"], item.get("secret"))
                yield f"redact-{pattern.id}-{kind}-{i}", pattern, kind, text, secret


def check_example(pattern: Pattern, kind: str, text: str, secret: str | None,
                  patterns: Sequence[Pattern] | None = None) -> str | None:
    """Return None if the example behaves under the whole redactor, else a one-line reason."""
    out = redact_text(text, patterns)
    if kind == "match":
        if f"[REDACTED:{pattern.id}]" not in out:
            return f"{pattern.id}: must redact but did not: {text[:200]!r} -> {out[:200]!r}"
        if secret and secret in out:
            return f"{pattern.id}: {secret!r} survived: {out[:200]!r}"
        return None
    if out != text:
        return f"{pattern.id}: must leave unchanged but got {out[:200]!r}"
    return None
