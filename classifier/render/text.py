"""Human output. rich on a terminal, plain unwrapped text when piped.

Log text is never parsed as markup or highlighted: a line holding `[rank3]:` or `[/bold]`
must print exactly as the job wrote it.
"""

from __future__ import annotations

import os

from classifier.diagnosis.culprit import culprit_line
from classifier.facts import fact_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any, TextIO


def _segments(d):
    """The report as lines of (style, text) segments, independent of the terminal."""
    out = []
    layer = f"  [{d['layer']}]" if d.get("layer") else ""
    out.append([("bold red" if d["category"] not in ("none", "unknown") else "bold", d["category"]),
                ("dim", layer), ("", f"  {d['title']}")])
    meta = f"confidence {d['confidence']:.2f}, source {d['source']}"
    if d.get("rule"):
        meta += f", rule {d['rule']}"
    out.append([("dim", meta)])
    culprit = culprit_line(d.get("culprit"))
    if culprit:
        out.append([("bold", "Culprit: "), ("", culprit), ("dim", f"  (confidence {d['culprit']['confidence']:.2f})")])
    if d["evidence"]:
        out.append([])
        out.append([("bold", "Evidence")])
        for ev in d["evidence"]:
            rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
            out.append([("cyan", f"  {ev['file']}:{ev['line']}{rank}: "), ("", ev["text"])])
    facts = {k: v for k, v in d["facts"].items() if k != "ranks"}
    if facts:
        out.append([])
        out.append([("bold", "Facts")])
        for key, value in facts.items():
            out.append([("", f"  {key}: "), ("green", fact_text(value))])
    if d["remediation"]:
        out.append([])
        out.append([("bold", "What to do")])
        for i, step in enumerate(d["remediation"], 1):
            out.append([("", f"  {i}. {step}")])
    if d["secondary"]:
        out.append([])
        out.append([("bold", "Also seen")])
        for s in d["secondary"]:
            where = ""
            if s["evidence"]:
                ev = s["evidence"][0]
                where = f" at {ev['file']}:{ev['line']}"
            out.append([("", f"  {s['category']} ({s['rule']}){where}")])
    for warning in d["warnings"]:
        out.append([("yellow", f"warning: {warning['code']}: {warning['message']}")])
    return out


def render_text(d: dict[str, Any], stream: TextIO, color: bool | None = None) -> None:
    """Write the human report; `color` None means: only on a terminal and without NO_COLOR."""
    if color is None:
        color = stream.isatty() and not os.environ.get("NO_COLOR")
    lines = _segments(d)
    if not color:
        for segs in lines:
            stream.write("".join(text for _, text in segs) + "\n")
        return
    from rich.console import Console
    from rich.text import Text
    # Reaching here means colour was asked for (a terminal without NO_COLOR, or --color always).
    console = Console(file=stream, markup=False, highlight=False, emoji=False,
                      soft_wrap=True, force_terminal=True, no_color=False)
    for segs in lines:
        text = Text()
        for style, chunk in segs:
            text.append(chunk, style=style or None)
        console.print(text)
