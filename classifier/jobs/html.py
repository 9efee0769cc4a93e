"""The triage report: one self-contained HTML page (inline CSS, JS and SVG; no network at all).

What it shows, top to bottom: how the files were grouped into jobs, links to each section, the
colour key (a category takes its layer's colour), a bar chart of jobs per category, the summary
grouped by category and grouping key (collapsed), and a sortable, filterable table of jobs;
each job row opens onto its evidence and its rank timeline (inline SVG): one row per rank, a
column per finding (root cause first, then the other findings) marking which ranks hit it, and
the evidence lines placed by their line number in the rank's log (position within a file is
time order; evidence that carries a `ts`, seconds since the epoch, is placed by time instead).

The page's script reads its state from the URL — `#sort=confidence&dir=desc`,
`#filter=cat:gpu_oom` (or `#category=gpu_oom`, or the same after `?`), `#open=all` (every job's
details) — so a link, or a headless browser in the tests, opens it sorted or filtered; a
filtered link scrolls to the jobs table and opens a job that is the only one left. A hash
without `=` (`#sec-jobs`) is a link to a section and leaves the state alone. Clicking a column
header sorts and records the state there; a bar of the chart and a category in the groups link
to its filter; `#click=KEY,KEY` clicks headers in turn (how the tests drive the real handlers). Every error the script meets is written into the page
(`#js-errors`), and `<html data-ready="1">` marks that it ran to the end. A
Content-Security-Policy forbids any fetch: the page works as a mail attachment.
All log text is escaped; evidence is cut to MAX_TEXT characters. Remediation is inline Markdown
(`code`, **bold**, [links](https://...)), rendered after escaping (markdown_inline).
"""

import html
import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from classifier.jobs.summary import grouping_line, summarize

MAX_TEXT = 2000
MAX_CELL = 240
MAX_TIMELINE_RANKS = 48
LAYER_COLOURS = {"install": "#7b5ea7", "env": "#1f8a70", "launch": "#d9822b", "config": "#2f6fb3",
                 None: "#8a8f98"}
OUTCOME_COLOURS = {"none": "#9cc59a", "unknown": "#8a8f98", "error": "#c0392b"}
FINDING_COLOURS = ("#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                   "#17becf")
SORT_KEYS = ("job", "category", "layer", "confidence", "group", "ranks")


def _e(text):
    return html.escape(str(text), quote=True)


def _cut(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


LEGEND = (("install", LAYER_COLOURS["install"]), ("env", LAYER_COLOURS["env"]),
          ("launch", LAYER_COLOURS["launch"]), ("config", LAYER_COLOURS["config"]),
          ("unknown", OUTCOME_COLOURS["unknown"]), ("none", OUTCOME_COLOURS["none"]),
          ("unreadable", OUTCOME_COLOURS["error"]))
# Remediation is written in Markdown's inline subset: `code`, **bold**, [text](https://...).
_MD_CODE = re.compile(r"`([^`]+)`")
_MD_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^\s)]+)\)")


def markdown_inline(text: str) -> str:
    """HTML for one line of inline Markdown; everything is escaped first, so no text is markup."""
    out, last = [], 0
    for m in _MD_CODE.finditer(text):
        out.append(_md_text(text[last:m.start()]))
        out.append(f"<code>{_e(m.group(1))}</code>")
        last = m.end()
    out.append(_md_text(text[last:]))
    return "".join(out)


def _md_text(text):
    # Escaping keeps `*`, `[`, `]`, `(`, `)` and `:` as they are, so the patterns still apply;
    # a link's target is escaped again as an attribute and can only be http(s).
    text = _MD_BOLD.sub(r"<strong>\1</strong>", _e(text))
    return _MD_LINK.sub(lambda m: f'<a href="{m.group(2)}" rel="noreferrer">{m.group(1)}</a>', text)


def colour_class(colour: str) -> str:
    """The class that gives an element this palette colour (`k-d62728`): no style attributes,
    so the page's CSP needs no 'unsafe-inline'."""
    return "k-" + colour.lstrip("#")


def _palette_css():
    colours = sorted(set(LAYER_COLOURS.values()) | set(OUTCOME_COLOURS.values()) | set(FINDING_COLOURS))
    rules = [f".{colour_class(c)}{{--c:{c}}}" for c in colours]
    rules.append(".swatch,#chart .fill{background:var(--c,#888)}")
    rules += [f"#chart .w{n}{{width:{n}%}}" for n in range(1, 101)]
    return "".join(rules)


def _csp_hash(source):
    import base64
    import hashlib
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def legend() -> str:
    """The colour key: a swatch per layer, and the outcomes that have no layer."""
    items = "".join(f'<li><span class="swatch {colour_class(c)}"></span>{_e(name)}</li>'
                    for name, c in LEGEND)
    return f'<ul id="legend" aria-label="colour key">{items}</ul>'


def category_colour(result_or_category: str, layer: str | None = None) -> str:
    """The colour of a category: its layer's, or the outcome's (none, unknown, error)."""
    category = result_or_category
    if category in OUTCOME_COLOURS:
        return OUTCOME_COLOURS[category]
    if layer is None:
        from classifier.taxonomy import layer_of
        layer = layer_of(category)
    return LAYER_COLOURS.get(layer, LAYER_COLOURS[None])


def category_chart(results: Iterable[dict[str, Any]]) -> str:
    """A bar per category, longest first, each a link to its filter (HTML, so it fits a phone)."""
    rows = [(category, total) for category, total, _ in summarize(results)]
    top = max([n for _, n in rows] + [1])
    bars = "".join(
        f'<a href="#filter=cat:{_e(category)}" class="bar" data-category="{_e(category)}" '
        f'title="{_e(category)}: {n} job{"s" if n != 1 else ""}"><span class="label">{_e(category)}'
        f'</span><span class="track"><span class="fill w{max(1, round(100 * n / top))} '
        f'{colour_class(category_colour(category))}"></span></span><span class="n">{n}</span></a>'
        for category, n in rows)
    return f'<div id="chart" aria-label="jobs per category">{bars}</div>'


def _findings(result):
    main = {k: result.get(k) for k in ("category", "rule", "evidence", "facts", "title")}
    main["role"] = "root cause"
    return [main] + [dict(s, role=f"also seen ({s.get('role', '')})") for s in result.get("secondary") or ()]


def rank_timeline(result: dict[str, Any]) -> str:
    """Inline SVG of one job: which ranks hit which finding, and where in the log (by line)."""
    findings = _findings(result)
    events, ranks_of = [], []
    for fi, finding in enumerate(findings):
        ranks = set((finding.get("facts") or {}).get("ranks") or ())
        for ev in finding.get("evidence") or ():
            events.append((fi, ev.get("rank"), ev.get("line") or 0, ev))
            if ev.get("rank") is not None:
                ranks.add(ev["rank"])
        ranks_of.append(ranks)
    if not events:
        return ""
    with_evidence = sorted({r for _, r, _, _ in events if r is not None})
    others = sorted(set().union(*ranks_of) - set(with_evidence))
    rows = (with_evidence + others)[:MAX_TIMELINE_RANKS]
    hidden = len(with_evidence) + len(others) - len(rows)
    rows = sorted(rows) + ([None] if any(r is None for _, r, _, _ in events) else [])
    row_of = {r: i for i, r in enumerate(rows)}
    label_w, cell, gap, plot_w, row_h, head = 70, 16, 18, 460, 16, 22
    grid_w = cell * len(findings)
    x0 = label_w + grid_w + gap
    # Evidence carrying a time ("ts", seconds since the epoch) is placed by time; otherwise by
    # its line number, which is time order within one file (and near it across rank files).
    by_time = all(isinstance(ev.get("ts"), (int, float)) for _, _, _, ev in events)
    where = [(ev["ts"] if by_time else line) for _, _, line, ev in events]
    lo, hi = min(where), max(where)
    width, height = x0 + plot_w + 20, head + row_h * len(rows) + 26

    def x_of(value):
        return x0 + (plot_w / 2 if hi == lo else plot_w * (value - lo) / (hi - lo))

    out = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="rank timeline">',
           f'<text x="{x0}" y="14" class="axis">evidence by {"time" if by_time else "log line"} →</text>']
    for i, rank in enumerate(rows):
        y = head + i * row_h
        label = "no rank" if rank is None else f"rank {rank}"
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{label}</text>'
                   f'<line x1="{x0}" x2="{x0 + plot_w}" y1="{y + 8}" y2="{y + 8}" class="lane"/>')
        for fi, finding in enumerate(findings):
            if rank in ranks_of[fi]:
                out.append(f'<rect x="{label_w + fi * cell + 2}" y="{y + 2}" width="{cell - 4}" '
                           f'height="{row_h - 4}" fill="{FINDING_COLOURS[fi % len(FINDING_COLOURS)]}">'
                           f'<title>{_e(label)}: {_e(finding.get("category"))}</title></rect>')
    for (fi, rank, line, ev), value in zip(events, where):
        if rank not in row_of:
            continue
        y = head + row_of[rank] * row_h + 8
        tip = f'{finding_label(findings[fi])} · {ev.get("file")}:{line} · {_cut(ev.get("text", ""), 300)}'
        out.append(f'<circle cx="{x_of(value):.1f}" cy="{y}" r="{6 if fi == 0 else 4}" '
                   f'fill="{FINDING_COLOURS[fi % len(FINDING_COLOURS)]}" class="event">'
                   f'<title>{_e(tip)}</title></circle>')
    y = head + row_h * len(rows) + 16
    if by_time:
        ends = (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(lo)),
                time.strftime("%H:%M:%S", time.gmtime(hi)))
    else:
        ends = (f"line {lo}", f"line {hi}")
    out.append(f'<text x="{x0}" y="{y}" class="axis">{ends[0]}</text>'
               f'<text x="{x0 + plot_w}" y="{y}" text-anchor="end" class="axis">{ends[1]}</text>')
    if hidden:
        out.append(f'<text x="4" y="{y}" class="axis">+{hidden} ranks not drawn</text>')
    out.append("</svg>")
    return "".join(out)


def finding_label(finding: dict[str, Any]) -> str:
    """`category (rule)` of one finding."""
    rule = finding.get("rule")
    return f'{finding.get("category")} ({rule})' if rule else str(finding.get("category"))


def _path(text):
    """An escaped path that may wrap after its slashes rather than inside a name."""
    return _e(text).replace("/", "/<wbr>")


def _evidence_item(ev):
    where = f'{ev.get("file")}:{ev.get("line")}'
    rank, task = ev.get("rank"), ev.get("task")
    label = ("" if rank is None else f" rank {rank}") + ("" if task is None else f" (task {task})")
    return (f'<li><span class="where">{_path(where)}{label}</span> '
            f'<code>{_e(_cut(ev.get("text", ""), MAX_TEXT))}</code></li>')


def _details(result):
    if "error" in result:
        return f'<p class="error">{_e(result["error"])}</p>'
    parts = []
    for fi, finding in enumerate(_findings(result)):
        facts = finding.get("facts") or {}
        summary = facts.get("ranks_summary")
        colour = FINDING_COLOURS[fi % len(FINDING_COLOURS)]
        parts.append(f'<h4><span class="swatch {colour_class(colour)}">'
                     f'</span>{_e(finding["role"])}: {_e(finding_label(finding))}'
                     f'{f" — {_e(summary)}" if summary else ""}</h4>'
                     f'<p>{_e(finding.get("title") or "")}</p>')
        evidence = finding.get("evidence") or ()
        if evidence:
            parts.append("<ol>" + "".join(_evidence_item(ev) for ev in evidence) + "</ol>")
    timeline = rank_timeline(result)
    if timeline:
        parts.append('<div class="tl">' + timeline + "</div>")
    remediation = result.get("remediation") or ()
    if remediation:
        parts.append('<h4>What to do</h4><ol class="steps">'
                     + "".join(f"<li>{markdown_inline(step)}</li>" for step in remediation) + "</ol>")
    return "".join(parts)


def _job_body(index, result):
    error = "error" in result
    category = "error" if error else result.get("category", "")
    evidence = result.get("evidence") or []
    ranks = (result.get("facts") or {}).get("ranks") or []
    summary = (result.get("facts") or {}).get("ranks_summary", "")
    first = ""
    if error:
        first = _e(result["error"])
    elif evidence:
        ev = evidence[0]
        # the job column names the path; the file name is enough to tell a job's files apart
        first = (f'<span class="where" title="{_e(ev.get("file"))}">'
                 f'{_e(os.path.basename(str(ev.get("file"))))}:{ev.get("line")}</span> '
                 f'<code>{_e(_cut(ev.get("text", ""), MAX_CELL))}</code>')
    confidence = result.get("confidence")
    data = {"index": index, "job": result.get("job", ""), "category": category,
            "layer": result.get("layer") or "", "confidence": confidence if confidence is not None else -1,
            "group": result.get("group", ""), "ranks": len(ranks)}
    attrs = " ".join(f'data-{k}="{_e(v)}"' for k, v in data.items())
    return (f'<tbody class="job" {attrs}><tr>'
            f'<td class="jobpath">{_path(result.get("job", ""))}</td>'
            f'<td><span class="cat {colour_class(category_colour(category, result.get("layer")))}">'
            f'{_e(category)}</span></td>'
            f'<td data-label="layer">{_e(result.get("layer") or "—")}</td>'
            f'<td class="num" data-label="confidence">{"" if confidence is None else f"{confidence:.2f}"}</td>'
            f'<td class="group" data-label="group">{_e(result.get("group", "")).replace(".", ".<wbr>")}</td>'
            f'<td data-label="ranks">{_e(summary)}</td>'
            f'<td class="ev">{first}</td></tr>'
            f'<tr class="more"><td colspan="7"><details><summary>evidence and rank timeline'
            f'</summary>{_details(result)}</details></td></tr></tbody>')


def _summary_table(results):
    rows = []
    for category, total, groups in summarize(results):
        for i, (group, count, example) in enumerate(groups):
            head = (f'<td rowspan="{len(groups)}"><a href="#category={_e(category)}" '
                    f'class="cat {colour_class(category_colour(category))}">{_e(category)}</a></td>'
                    f'<td rowspan="{len(groups)}" class="num">{total}</td>'
                    if i == 0 else "")
            rows.append(f'<tr>{head}<td class="num">{count}</td><td class="group">{_e(group)}</td>'
                        f'<td class="jobpath">{_path(example or "")}</td></tr>')
    return ('<table id="groups"><thead><tr><th>category</th><th>jobs</th><th>in group</th>'
            '<th>group (rule and captures)</th><th>first job</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _hosts_table(results):
    from classifier.jobs.hosts import culprit_hosts
    rows = "".join(f'<tr><td class="host">{_e(r.host)}</td><td class="num">{r.jobs}</td>'
                   f'<td>{_e(r.categories_text())}</td><td>{_e(r.last_seen or "-")}</td></tr>'
                   for r in culprit_hosts(results))
    if not rows:
        return "<p>No failed job names a culprit host.</p>"
    return ('<table id="hosts"><thead><tr><th>host</th><th>failed jobs</th><th>categories</th>'
            '<th>last seen</th></tr></thead><tbody>' + rows + "</tbody></table>")


_HEADERS = (("job", "job"), ("category", "category"), ("layer", "layer"),
            ("confidence", "confidence"), ("group", "group"), ("ranks", "ranks"), (None, "evidence"))


def render_html(results: Sequence[dict[str, Any]], title: str = "dsdiag triage") -> str:
    """The whole page as a string."""
    from classifier.jobs.html_assets import CSS, ERROR_TRAP, SCRIPT
    css = CSS + _palette_css()
    # Only this page's own style sheet and scripts run, named by their hashes: nothing a log
    # line could bring (it is escaped anyway) would be trusted as inline code or style.
    csp = (f"default-src 'none'; style-src {_csp_hash(css)}; "
           f"script-src {_csp_hash(ERROR_TRAP)} {_csp_hash(SCRIPT)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    n = len(results)
    heads = "".join(f'<th data-key="{key}" aria-sort="none" tabindex="0">{label}</th>' if key
                    else f"<th>{label}</th>" for key, label in _HEADERS)
    bodies = "".join(_job_body(i, r) for i, r in enumerate(results))
    grouping = grouping_line(results)
    n_groups = sum(len(groups) for _, _, groups in summarize(results))
    top = '<a class="top" href="#top" title="back to the top">↑ top</a>'
    grouping_html = f' <span id="grouping">{_e(grouping)}</span>' if grouping else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{_e(title)}</title>'
        f"<style>{css}</style></head><body>"
        f'<pre id="js-errors" hidden></pre><script>{ERROR_TRAP}</script>'
        f'<h1 id="top">{_e(title)}</h1><p>{n} job{"s" if n != 1 else ""}.'
        f'{grouping_html}</p>'
        f'<nav id="toc"><a href="#sec-jobs">Jobs ({n})</a><a href="#sec-chart">Jobs per category</a>'
        f'<a href="#sec-groups">Groups ({n_groups})</a><a href="#sec-hosts">Hosts to look at</a></nav>'
        f'<p class="legend-line">Colour of a category: its layer (checked in the order install, env, '
        f'launch, config), or the outcome. {legend()}</p>'
        f'<h2 id="sec-chart">Jobs per category {top}</h2>{category_chart(results)}'
        f'<details id="groups-box"><summary><h2 id="sec-groups">Groups ({n_groups})</h2></summary>'
        f'{_summary_table(results)}</details>'
        f'<h2 id="sec-hosts">Hosts to look at {top}</h2>{_hosts_table(results)}'
        f'<h2 id="sec-jobs">Jobs {top}</h2><p><label>filter <input id="filter" type="search" '
        'placeholder="text, or cat:CATEGORY"></label> <span id="shown"></span></p>'
        f'<table id="jobs"><thead><tr>{heads}</tr></thead>{bodies}</table>'
        f'<script id="data" type="application/json">{_json_for_script({"sort_keys": SORT_KEYS})}</script>'
        f"<script>{SCRIPT}</script></body></html>\n")


def _json_for_script(value):
    # `</script>` or `<!--` inside a string would end the element early.
    return json.dumps(value).replace("<", "\\u003c")


def write_html(results: Sequence[dict[str, Any]], path: str) -> None:
    """Write the report to `path`."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_html(results))
