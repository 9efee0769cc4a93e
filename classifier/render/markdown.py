"""`--format markdown`: a block to paste into a ticket; log text goes in fenced code.

Nothing from a log becomes markup: evidence sits in a fence no line of it can close, values
in code spans no backtick of theirs can close, and the prose (titles, remediation filled with
captured values, warnings) keeps its `code` spans but has every other character Markdown or
HTML would act on escaped, and URLs put in code, so a log cannot plant a link, an image, raw
HTML or a heading in the ticket.
"""

from __future__ import annotations

import re

from classifier.diagnosis.culprit import culprit_line
from classifier.facts import fact_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any, TextIO

_CODE_SPAN = re.compile(r"`[^`]+`")
_URL = re.compile(r"(?i)\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s`]*")
_SPECIAL = re.compile(r"([\\\[\]<>!#|&])")  # emphasis (* _) is harmless: kept


def _fence(lines):
    # A log line may itself contain backticks: pick a fence no line contains.
    ticks = "```"
    while any(ticks in text for text in lines):
        ticks += "`"
    return ticks


def code(text: str) -> str:
    """`text` as an inline code span that no backtick inside it can close."""
    text = str(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _escape(text):
    out, last = [], 0
    for m in _URL.finditer(text):  # a URL in code is shown, never followed
        out.append(_SPECIAL.sub(r"\\\1", text[last:m.start()]))
        out.append(code(m.group()))
        last = m.end()
    out.append(_SPECIAL.sub(r"\\\1", text[last:]))
    return "".join(out)


def prose(text: str) -> str:
    """Inline Markdown for a line of prose: its `code` spans kept, everything else inert."""
    text = str(text)
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape(text[last:m.start()]))
        out.append(m.group())
        last = m.end()
    out.append(_escape(text[last:]))
    return "".join(out)


def _location(ev):
    rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
    return f"{ev['file']}:{ev['line']}{rank}"


def render_markdown(d: dict[str, Any], stream: TextIO) -> None:
    """Write the diagnosis as Markdown."""
    w = stream.write
    layer = f" (layer: {prose(d['layer'])})" if d.get("layer") else ""
    w(f"### dsdiag: {code(d['category'])}{layer}\n\n")
    w(f"**{prose(d['title'])}** — confidence {d['confidence']:.2f}, source {prose(d['source'])}")
    w(f", rule {code(d['rule'])}\n\n" if d.get("rule") else "\n\n")
    culprit = culprit_line(d.get("culprit"))
    if culprit:
        w(f"**Culprit**: {prose(culprit)} (confidence {d['culprit']['confidence']:.2f})\n\n")
    if d["evidence"]:
        w("**Evidence**\n\n")
        lines = [f"{_location(ev)}: {ev['text']}" for ev in d["evidence"]]
        fence = _fence(lines)
        w(f"{fence}text\n")
        for line in lines:
            w(f"{line}\n")
        w(f"{fence}\n\n")
    facts = {k: v for k, v in d["facts"].items() if k != "ranks"}
    if facts:
        w("**Facts**\n\n")
        for key, value in facts.items():
            w(f"- {prose(key)}: {code(fact_text(value))}\n")
        w("\n")
    if d["remediation"]:
        w("**What to do**\n\n")
        for i, step in enumerate(d["remediation"], 1):
            w(f"{i}. {prose(step)}\n")
        w("\n")
    if d["secondary"]:
        w("**Also seen**\n\n")
        for s in d["secondary"]:
            where = f" at {code(_location(s['evidence'][0]))}" if s["evidence"] else ""
            w(f"- {code(s['category'])} ({prose(s['rule'])}){where}\n")
        w("\n")
    for warning in d["warnings"]:
        w(f"> warning {code(warning['code'])}: {prose(warning['message'])}\n")
