"""Kubernetes: a compact verdict in the container's termination message.

The kubelet reads the file named by the container's `terminationMessagePath` (default
`/dev/termination-log`) when the container exits and shows it in `kubectl describe pod` and
in `.status.containerStatuses[].state.terminated.message`; it keeps at most 4096 bytes per
container. So the message is a few short lines, most important first, cut on a UTF-8
boundary: the category and what to do with it, one evidence line, the first remediation step.

With `--k8s-termination-log` dsdiag also exits with the per-category codes of
the exit codes of the category table (classifier/taxonomy.py), which a Job's `podFailurePolicy` matches
(docs/integrations.md, examples/k8s-job.yaml).
"""

import os
from typing import Any

from classifier.diagnosis.culprit import culprit_line
from classifier.taxonomy import diagnosis_exit_code

DEFAULT_PATH = "/dev/termination-log"
MAX_BYTES = 4096
MAX_LINE_CHARS = 1000


def _clip(text, limit=MAX_LINE_CHARS):
    text = " ".join(str(text).split())  # one line: a log line may carry tabs or stray \r
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_step(remediation):
    """The first concrete step; the checklist item only when there is nothing else."""
    for step in remediation:
        if not step.startswith("Checklist: "):
            return step
    return remediation[0] if remediation else None


def termination_message(d: dict[str, Any], limit: int = MAX_BYTES) -> str:
    """Render the compact verdict; at most `limit` bytes of UTF-8."""
    category = d["category"]
    retryable = d.get("retryable")
    verdict = {True: "retryable", False: "fix first"}.get(retryable, "no verdict")
    layer = f" [{d['layer']}]" if d.get("layer") else ""
    lines = [f"dsdiag: {category}{layer} {verdict} (exit {diagnosis_exit_code(d)})",
             _clip(d.get("title", ""))]
    if d.get("evidence"):
        ev = d["evidence"][0]
        rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
        lines.append(_clip(f"evidence: {ev['file']}:{ev['line']}{rank}: {ev['text']}"))
    culprit = culprit_line(d.get("culprit"))
    if culprit:
        lines.append(_clip(f"culprit: {culprit}"))
    step = _first_step(d.get("remediation") or [])
    if step:
        lines.append(_clip(f"next: {step}"))
    if d.get("retry_reason"):
        lines.append(_clip(f"why: {d['retry_reason']}"))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if len(data) > limit:
        data = data[: limit - len("…\n".encode())]
        data = data.decode("utf-8", errors="ignore").encode("utf-8") + "…\n".encode()
    return data.decode("utf-8")


def check_path(path: str, explicit: bool) -> str | None:
    """Return an error message if writing `path` could destroy a user's file, else None.

    `--k8s-termination-log job.log` reads as PATH=job.log to argparse; the kubelet's file is
    empty (or ours) when the container starts, so a non-empty file we did not write is
    refused instead of overwritten.
    """
    if not explicit or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(7)
    except OSError:
        return None
    if head and head != b"dsdiag:":
        return (f"--k8s-termination-log: {path} is a non-empty file dsdiag did not write; "
                "refusing to overwrite it (write --k8s-termination-log=PATH, or put the option "
                "after the log files)")
    return None


def write_termination_log(path: str, d: dict[str, Any]) -> None:
    """Write the compact verdict to `path` (truncating it)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(termination_message(d))
