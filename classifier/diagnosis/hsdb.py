"""Hyperscan databases, compiled once and kept in the rule cache directory.

Compiling ~500 expressions takes about a second, longer than a big log's scan or a small
log's whole diagnosis; a serialised database loads in well under a millisecond. The key
covers the expressions, their flags, Hyperscan's version and the machine; a database that
will not load here is compiled again. Without the Hyperscan wheel there is no database and
callers take their pure-Python path.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any


def load_database(expressions: Sequence[bytes], flags: "int | Sequence[int]", kind: str,
                  ids: Sequence[int] | None = None) -> Any:
    """The block-mode database of `expressions` (all with `flags`, or each with its own;
    reported by `ids`, by default their indexes), or None without Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    import os
    from classifier.rules.cache import cache_key, read_cached_bytes, write_cached_bytes
    # os.uname, not platform.machine(): importing platform costs a few ms of every run.
    machine = os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE", "")
    same = isinstance(flags, int)  # keyed as before: one flag for all
    flags = [flags] * len(expressions) if same else list(flags)
    key = cache_key(b"\0".join(expressions), str(flags[0] if same else flags).encode(),
                    hyperscan.__version__.encode(), machine.encode(),
                    *([str(list(ids)).encode()] if ids is not None else []))
    cached = read_cached_bytes(kind, key)
    if cached:
        try:
            return hyperscan.loadb(cached, mode=hyperscan.HS_MODE_BLOCK)
        except Exception:  # noqa: BLE001 - any refusal means "compile it here"
            pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(expressions), ids=list(range(len(expressions)) if ids is None else ids),
               elements=len(expressions), flags=flags)
    write_cached_bytes(kind, key, hyperscan.dumpb(db))
    return db
