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

import copy
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

PATTERNS_FILE = Path(__file__).with_name("redaction.yaml")
_PEM_BEGIN = re.compile(r"-----BEGIN (?P<kind>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


class Pattern:
    """One secret shape: its id (the label), compiled regex, replacement and examples."""

    __slots__ = ("id", "title", "regex", "replace", "examples")

    def __init__(self, entry: dict[str, Any]) -> None:
        self.id = entry["id"]
        self.title = entry.get("title", "")
        self.regex = re.compile(entry["regex"])
        self.replace = entry.get("replace") or f"[REDACTED:{self.id}]"
        self.examples = entry.get("examples") or {}

    def sub(self, text: str) -> str:
        """Return `text` with this pattern's matches replaced."""
        return self.regex.sub(self.replace, text)


@lru_cache(maxsize=None)
def load_patterns(path: str | Path = PATTERNS_FILE) -> tuple[Pattern, ...]:
    """Load and compile the redaction patterns (cached; yaml is imported only here)."""
    import yaml
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return tuple(Pattern(entry) for entry in data["patterns"])


def redact_text(text: str, patterns: Sequence[Pattern] | None = None) -> str:
    """Return `text` with every secret replaced by `[REDACTED:<pattern id>]`."""
    if not text:
        return text
    for pattern in patterns or load_patterns():
        text = pattern.sub(text)
    return text


def redact_lines(texts: Iterable[str], patterns: Sequence[Pattern] | None = None) -> list[str]:
    """Redact consecutive log lines; lines inside a PEM private-key block are dropped whole.

    A block's BEGIN line is redacted by its pattern; its base64 body lines and the END line
    follow as separate lines and are replaced here, since nothing in them alone says "key".
    """
    out = []
    inside = False
    for text in texts:
        if inside:
            out.append("[REDACTED:pem-private-key]")
            inside = not _PEM_END.search(text)
            continue
        begin = _PEM_BEGIN.search(text)
        inside = bool(begin) and not _PEM_END.search(text, begin.end())
        out.append(redact_text(text, patterns))
    return out


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
    """Return a redacted deep copy of a diagnosis dict; the input is left untouched."""
    patterns = patterns or load_patterns()
    return _redact_value(copy.deepcopy(diagnosis), patterns)


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
