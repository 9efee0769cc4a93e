"""Hosts to look at: failed jobs grouped by the host their culprit names, across an archive.

One bad node fails many jobs in many ways (an Xid one day, a hung NCCL collective the next),
so the triage summary, the HTML report and `dsdiag triage --drain-list` count, per culprit
host, the failed jobs that started there, their categories and when the newest was written.
"""

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO


@dataclass
class HostRow:
    """One host named as a culprit: how many jobs, in which categories, the newest when."""

    host: str
    jobs: int = 0
    categories: dict[str, int] = field(default_factory=dict)
    last_seen: str = ""

    def categories_text(self) -> str:
        """'nccl_timeout x2, gpu_hardware' — most frequent first."""
        items = sorted(self.categories.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(c if n == 1 else f"{c} x{n}" for c, n in items)


def last_modified(files: Iterable[str]) -> str:
    """The newest modification time of a job's files, ISO 8601 UTC; '' when none can be read."""
    times = []
    for path in files:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(max(times))) if times else ""


def culprit_hosts(results: Iterable[dict[str, Any]]) -> list[HostRow]:
    """Hosts named by the culprit of failed jobs, the most failed jobs first."""
    rows: dict[str, HostRow] = {}
    for result in results:
        culprit = result.get("culprit")
        if not culprit or result.get("category") in (None, "none"):
            continue
        for host in dict.fromkeys(culprit.get("hosts") or ()):
            row = rows.setdefault(host, HostRow(host))
            row.jobs += 1
            row.categories[result["category"]] = row.categories.get(result["category"], 0) + 1
            row.last_seen = max(row.last_seen, result.get("last_seen") or "")
    # most failed jobs first, then the newest, then by name (stable sorts, last key first)
    ordered = sorted(rows.values(), key=lambda r: r.host)
    ordered.sort(key=lambda r: r.last_seen, reverse=True)
    ordered.sort(key=lambda r: r.jobs, reverse=True)
    return ordered


def drain_list(results: Iterable[dict[str, Any]], min_jobs: int = 1) -> list[str]:
    """The hosts named as culprit in at least `min_jobs` failed jobs."""
    return [row.host for row in culprit_hosts(results) if row.jobs >= min_jobs]


def host_record(row: HostRow) -> dict[str, Any]:
    """One row of the hosts table as a JSON object (`triage --hosts-jsonl`)."""
    return {"host": row.host, "failed_jobs": row.jobs, "categories": dict(row.categories),
            "last_seen": row.last_seen or None}


HEADER = ("host", "failed jobs", "categories", "last seen")


def print_hosts(rows: Sequence[HostRow], stream: TextIO) -> None:
    """The hosts-to-look-at table as plain aligned text (nothing when no host was named)."""
    if not rows:
        return
    cells = [(r.host, str(r.jobs), r.categories_text(), r.last_seen or "-") for r in rows]
    widths = [max(len(HEADER[i]), *(len(c[i]) for c in cells)) for i in range(3)]
    stream.write("\nhosts to look at (named as the culprit of failed jobs)\n")
    for row in [HEADER] + cells:
        stream.write("  ".join([row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                                row[2].ljust(widths[2]), row[3]]).rstrip() + "\n")
