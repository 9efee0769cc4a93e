"""`--format json`: the contract, one object per job, straight to stdout (never via rich)."""

import json
from typing import Any, TextIO


def render_json(diagnosis: dict[str, Any], stream: TextIO) -> None:
    """Write the diagnosis as one JSON object followed by a newline."""
    stream.write(json.dumps(diagnosis, ensure_ascii=False, indent=2))
    stream.write("\n")
