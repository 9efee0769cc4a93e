"""Hyperscan databases, compiled once and kept in the rule cache directory.

Compiling ~500 expressions takes about a second, longer than a big log's scan or a small
log's whole diagnosis; a serialised database loads in well under a millisecond. The key
covers the expressions, their flags, Hyperscan's version and the machine; a database that
will not load here is compiled again. Without the Hyperscan wheel there is no database and
callers take their pure-Python path.
"""

from collections.abc import Sequence
from typing import Any


def load_database(expressions: Sequence[bytes], flags: int, kind: str) -> Any:
    """The block-mode database of `expressions` (all with `flags`), or None without Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    import base64
    import os
    from classifier.rules.cache import cache_key, read_cached, write_cached
    # os.uname, not platform.machine(): importing platform costs a few ms of every run.
    machine = os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE", "")
    key = cache_key(b"\0".join(expressions), str(flags).encode(), hyperscan.__version__.encode(),
                    machine.encode())
    cached = read_cached(kind, key)
    if isinstance(cached, str):
        try:
            return hyperscan.loadb(base64.b64decode(cached), mode=hyperscan.HS_MODE_BLOCK)
        except Exception:  # noqa: BLE001 - any refusal means "compile it here"
            pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(expressions), ids=list(range(len(expressions))),
               elements=len(expressions), flags=[flags] * len(expressions))
    write_cached(kind, key, base64.b64encode(hyperscan.dumpb(db)).decode("ascii"))
    return db
