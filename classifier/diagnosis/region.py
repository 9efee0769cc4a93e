"""The failure region of a log: the lines the fallback model reads, masked of run-specific values.

A job's cause sits near its end: the last tracebacks and error lines. Healthy chatter (NCCL
INFO, step lines, progress bars) is skipped, and numbers, hex ids, addresses and directory
paths are masked, so the model learns the wording of a failure and not one run's values.
"""

import re
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from classifier.vocabulary import EXCEPTION_LINE

if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

TAIL = 60           # last meaningful lines kept
EXCEPTIONS = 20     # exception lines kept (first ones are usually the cause, last the echo)

_CHATTER = re.compile(r" NCCL INFO |\[INFO\]|^INFO[: ]|%\||\bit/s\]|^\{'loss'|^\s*$")
_MASKS = (
    (re.compile(r"0x[0-9a-fA-F]+"), " hexid "),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), " ipaddr "),
    (re.compile(r"(?:[\w.~-]*/)+([\w.-]+)"), r" \1 "),          # keep a path's file name only
    (re.compile(r"\d+(?:\.\d+)?"), " "),
)


def mask(text: str) -> str:
    """Replace run-specific values (hex ids, addresses, directories, numbers) in a line."""
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


class FailureRegion:
    """Collects, line by line, the tail and the exception lines of a job (bounded memory)."""

    def __init__(self) -> None:
        self.tail = deque(maxlen=TAIL)
        self.first_exceptions = []
        self.last_exceptions = deque(maxlen=EXCEPTIONS // 2)

    def feed(self, line: "Line") -> None:
        """Inspect one normalised line."""
        msg = line.msg
        if not msg or _CHATTER.search(msg):
            return
        self.tail.append(line)
        if EXCEPTION_LINE.match(msg):
            if len(self.first_exceptions) < EXCEPTIONS // 2:
                self.first_exceptions.append(line)
            else:
                self.last_exceptions.append(line)

    def lines(self) -> list["Line"]:
        """The region's lines: exception lines first, then the tail, each line once."""
        out, seen = [], set()
        for line in list(self.first_exceptions) + list(self.last_exceptions) + list(self.tail):
            key = (line.source, line.lineno)
            if key not in seen:
                seen.add(key)
                out.append(line)
        return out


def region_text(lines: Iterable["Line"]) -> str:
    """The masked text the model reads: one masked line per region line."""
    return "\n".join(mask(line.msg) for line in lines)


def region_of_files(paths: Iterable[str]) -> list["Line"]:
    """Read a job's files and return its failure-region lines (used by training)."""
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import Warnings, read_lines
    region = FailureRegion()
    warnings = Warnings()
    for i, path in enumerate(paths):
        for line in normalize(read_lines(path, warnings), index=i):
            region.feed(line)
    return region.lines()
