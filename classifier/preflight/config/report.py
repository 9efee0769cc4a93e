"""How `dsdiag check-config` prints its findings: text lines, JSON, GitHub Actions annotations.

Text is `path:line:col: severity: category: message` (the shape compilers and linters print,
so editors and problem matchers read it), then the fix indented below.
"""

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from classifier.preflight.finding import Finding, count_line

if TYPE_CHECKING:
    from classifier.preflight.config.checks import World
    from classifier.preflight.deepspeed.introspect import Schema

STDIN_NAME = "<stdin>"


def checked_against(schema: "Schema", why: str) -> str:
    """The line that says which schema the config was checked against, and why."""
    if schema.source == "deepspeed":
        text = f"checked against DeepSpeed {schema.version}'s own config models"
        if schema.fallback_sections:
            text += f" (built-in schema for {', '.join(schema.fallback_sections)})"
        return text
    return (f"checked against dsdiag's built-in schema (follows DeepSpeed {schema.version}; "
            f"{why})")


def render_text(path: str, findings: Sequence[Finding], out: TextIO) -> None:
    """Write one file's findings, each a located line with its severity, the fix below."""
    for f in findings:
        out.write(f"{path}:{f.line}:{f.col}: {f.severity}: {f.category}: {f.message}\n")
        if f.fix:
            out.write(f"    {'hint' if f.severity == 'note' else 'fix'}: {f.fix}\n")


def summary_line(findings: Sequence[Finding], files: int, schema: "Schema", why: str) -> str:
    """The last line: the counts (over all files) and what the configs were checked against."""
    head = f"{files} files: " if files > 1 else ""
    return f"{head}{count_line(findings)}; {checked_against(schema, why)}"


def json_document(path: str, findings: Sequence[Finding], schema: "Schema", why: str,
                  world: "World | None") -> dict[str, object]:
    """One file's findings as the JSON document (schema_version 1), problems apart from notes."""
    return {
        "schema_version": 1,
        "file": path,
        "checked_against": {"source": schema.source, "deepspeed_version": schema.version,
                            "reason": why, "text": checked_against(schema, why)},
        "world_size": world.size if world else None,
        "problems": [dict(f.to_json(), file=path) for f in findings if f.is_problem],
        "notes": [dict(f.to_json(), file=path) for f in findings if not f.is_problem],
        "summary": count_line(findings),
    }


def _strict(value: object) -> object:
    """The value with NaN / Infinity (which a config may hold) as strings: strict JSON."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def render_json(docs: Sequence[dict[str, object]], out: TextIO) -> None:
    """One file: its document, indented. Several: one document per line (JSON Lines)."""
    if len(docs) == 1:
        json.dump(_strict(docs[0]), out, indent=2, default=str, allow_nan=False)
        out.write("\n")
        return
    for doc in docs:
        out.write(json.dumps(_strict(doc), default=str, allow_nan=False) + "\n")


# GitHub's workflow commands: `::error file=F,line=L,col=C,title=T::message`. The message
# escapes %, CR and LF; property values escape ':' and ',' as well (actions/toolkit,
# src/command.ts, escapeData and escapeProperty).
_LEVEL = {"error": "error", "warning": "warning"}


def escape_data(text: str) -> str:
    """A workflow command's message, escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value, escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(path: str, findings: Sequence[Finding], out: TextIO) -> None:
    """Write one annotation per problem (notes would clutter every pull request); stdin's
    annotations carry no file."""
    for f in findings:
        if not f.is_problem:
            continue
        props = [] if path == STDIN_NAME else [f"file={escape_property(path)}"]
        props += [f"line={f.line}", f"col={f.col}",
                  f"title={escape_property(f'dsdiag {f.category}')}"]
        message = f.message + (f"\n{'hint' if f.severity == 'note' else 'fix'}: {f.fix}"
                               if f.fix else "")
        out.write(f"::{_LEVEL[f.severity]} {','.join(props)}::{escape_data(message)}\n")
