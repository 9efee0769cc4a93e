"""`--format json`: the contract, one object per job, straight to stdout (never via rich)."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any, TextIO


def render_json(diagnosis: dict[str, Any], stream: TextIO) -> None:
    """Write the diagnosis as one JSON object followed by a newline."""
    stream.write(json.dumps(diagnosis, ensure_ascii=not writes_utf8(stream), indent=2))
    stream.write("\n")


def writes_utf8(stream: TextIO) -> bool:
    """Does `stream` encode UTF-8? If not (an ASCII locale), JSON is written as ASCII escapes,
    which every reader takes as the same text, so it stays valid in any locale."""
    encoding = getattr(stream, "encoding", None)
    return encoding is None or encoding.lower().replace("-", "") == "utf8"
