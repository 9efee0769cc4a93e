"""`--format markdown`: a block to paste into a ticket; log text goes in fenced code."""

from typing import Any, TextIO

from classifier.diagnosis.culprit import culprit_line
from classifier.facts import fact_text


def _fence(lines):
    # A log line may itself contain backticks: pick a fence no line contains.
    ticks = "```"
    while any(ticks in text for text in lines):
        ticks += "`"
    return ticks


def _location(ev):
    rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
    return f"{ev['file']}:{ev['line']}{rank}"


def render_markdown(d: dict[str, Any], stream: TextIO) -> None:
    """Write the diagnosis as Markdown."""
    w = stream.write
    layer = f" (layer: {d['layer']})" if d.get("layer") else ""
    w(f"### dsdiag: `{d['category']}`{layer}\n\n")
    w(f"**{d['title']}** — confidence {d['confidence']:.2f}, source {d['source']}")
    w(f", rule `{d['rule']}`\n\n" if d.get("rule") else "\n\n")
    culprit = culprit_line(d.get("culprit"))
    if culprit:
        w(f"**Culprit**: {culprit} (confidence {d['culprit']['confidence']:.2f})\n\n")
    if d["evidence"]:
        w("**Evidence**\n\n")
        texts = [ev["text"] for ev in d["evidence"]]
        fence = _fence(texts)
        w(f"{fence}text\n")
        for ev in d["evidence"]:
            w(f"{_location(ev)}: {ev['text']}\n")
        w(f"{fence}\n\n")
    facts = {k: v for k, v in d["facts"].items() if k != "ranks"}
    if facts:
        w("**Facts**\n\n")
        for key, value in facts.items():
            w(f"- {key}: `{fact_text(value)}`\n")
        w("\n")
    if d["remediation"]:
        w("**What to do**\n\n")
        for i, step in enumerate(d["remediation"], 1):
            w(f"{i}. {step}\n")
        w("\n")
    if d["secondary"]:
        w("**Also seen**\n\n")
        for s in d["secondary"]:
            where = f" at {_location(s['evidence'][0])}" if s["evidence"] else ""
            w(f"- `{s['category']}` ({s['rule']}){where}\n")
        w("\n")
    for warning in d["warnings"]:
        w(f"> warning `{warning['code']}`: {warning['message']}\n")
