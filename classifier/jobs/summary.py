"""The triage summary: how many jobs per category, and per grouping key within a category.

The grouping key is classifier.jobs.group.group_key (the winning rule and its stable captures).
On a terminal the table goes through rich (markup off: keys hold log text); piped, it is plain
aligned text, never wrapped, so `2> summary.txt` stays greppable.
"""

import os
from collections.abc import Iterable, Sequence
from typing import Any, TextIO


def summarize(
    results: Iterable[dict[str, Any]],
) -> list[tuple[str, int, list[tuple[str, int, str | None]]]]:
    """[(category, jobs, [(group, jobs, first job)])], largest first; unreadable jobs as `error`."""
    categories = {}
    for result in results:
        category = "error" if "error" in result else result.get("category", "unknown")
        groups = categories.setdefault(category, {})
        group = "error" if "error" in result else result.get("group", category)
        count, example = groups.get(group, (0, result.get("job")))
        groups[group] = (count + 1, example)
    out = []
    for category, groups in categories.items():
        rows = sorted(((g, n, ex) for g, (n, ex) in groups.items()), key=lambda r: (-r[1], r[0]))
        out.append((category, sum(n for _, n, _ in rows), rows))
    return sorted(out, key=lambda c: (c[0] in ("none", "error"), -c[1], c[0]))


def summary_rows(results: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """The summary as (category, jobs, group, example) rows, the category only on its first row."""
    rows = []
    for category, total, groups in summarize(results):
        for i, (group, count, example) in enumerate(groups):
            rows.append((category if i == 0 else "", str(total) if i == 0 else "", str(count),
                         group, example or ""))
    return rows


MAX_PAD = 70  # a longer group key overflows its column rather than widen every row
HEADER = ("category", "jobs", "in group", "group (rule and captures)", "first job")


def _footer(results):
    failed = sum(1 for r in results if "error" in r)
    diagnosed = sum(1 for r in results if r.get("category") not in (None, "none", "unknown"))
    text = f"{len(results)} job{'' if len(results) == 1 else 's'}: {diagnosed} diagnosed"
    text += f", {sum(1 for r in results if r.get('category') == 'unknown')} unknown"
    text += f", {sum(1 for r in results if r.get('category') == 'none')} none"
    return text + (f", {failed} unreadable" if failed else "")


GROUPINGS = {  # classifier.jobs.discover.grouping_of's answers, as the summary says them
    "file": "single files",
    "ranks": "from rank files",
    "torchrun": "from torchrun log dirs",
    "streams": "from x.out + x.err pairs",
}


def grouping_line(results: Iterable[dict[str, Any]]) -> str:
    """How the files were cut into jobs, one line (`12 files read as 5 jobs: ...`)."""
    counts = {}
    for r in results:
        if "grouping" in r:
            jobs, files = counts.get(r["grouping"], (0, 0))
            counts[r["grouping"]] = (jobs + 1, files + r.get("files", 1))
    if not counts:
        return ""
    jobs = sum(j for j, _ in counts.values())
    files = sum(f for _, f in counts.values())
    parts = [f"{j} {GROUPINGS.get(g, g)}" + ("" if g == "file" else f" ({f} files)")
             for g, (j, f) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    return (f"grouping: {files} file{'' if files == 1 else 's'} read as {jobs} "
            f"job{'' if jobs == 1 else 's'}: " + ", ".join(parts))


def print_summary(results: Sequence[dict[str, Any]], stream: TextIO) -> None:
    """Write the summary table to `stream` (rich on a terminal unless NO_COLOR, else plain)."""
    rows = summary_rows(results)
    if stream.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
        console = Console(file=stream, highlight=False, markup=False,
                          no_color=bool(os.environ.get("NO_COLOR")))
        table = Table(*HEADER, title="dsdiag triage", title_justify="left")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
        console.print(Text(_footer(results)))
        if grouping_line(results):
            console.print(Text(grouping_line(results)))
        from classifier.jobs.hosts import culprit_hosts
        hosts = culprit_hosts(results)
        if hosts:
            table = Table("host", "failed jobs", "categories", "last seen",
                          title="hosts to look at", title_justify="left")
            for row in hosts:
                table.add_row(*(Text(c) for c in (row.host, str(row.jobs), row.categories_text(),
                                                   row.last_seen or "-")))
            console.print(table)
        return
    widths = [min(MAX_PAD, max([len(HEADER[i])] + [len(r[i]) for r in rows])) for i in range(4)]
    for row in [HEADER] + rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].rjust(widths[2]),
                 row[3].ljust(widths[3]), row[4]]
        stream.write("  ".join(cells).rstrip() + "\n")
    stream.write(_footer(results) + "\n")
    if grouping_line(results):
        stream.write(grouping_line(results) + "\n")
    from classifier.jobs.hosts import culprit_hosts, print_hosts
    print_hosts(culprit_hosts(results), stream)
    stream.flush()
