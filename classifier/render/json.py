"""`--format json`: the contract, one object per job, straight to stdout (never via rich)."""

import json


def render_json(diagnosis, stream):
    """Write the diagnosis as one JSON object followed by a newline."""
    stream.write(json.dumps(diagnosis, ensure_ascii=False, indent=2))
    stream.write("\n")
