"""Data built from package files, kept in the user's cache directory.

Parsing and validating the built-in rule files costs more than diagnosing a small log, and the
result depends only on their bytes and on this dsdiag; so it is built on first use and read
back by later runs. The cache only ever saves time: an unwritable directory, a corrupt or
truncated file, or a key that does not match mean "build it again", never an error. What
every run reads is kept with `marshal` (`binary=True`): it reads back in a third of json's
time, and a run that reads only marshal never imports json (~1 ms of a start).
"""

from __future__ import annotations

import marshal
import os
import time

from classifier import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any

try:  # the built-in modules: `import hashlib` loads OpenSSL, a few ms of every run
    from _sha256 import sha256
except ImportError:  # Python 3.12 and later call it _sha2; hashlib has it everywhere
    from hashlib import sha256
try:  # the cache's keys: BLAKE2b hashes ~4x as fast as sha256 here (a run hashes ~200 KB)
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

FORMAT = 2  # bump when the layout of what is cached changes (2: the pattern tables in marshal)
STALE_DAYS = 30  # other cache files of a kind untouched this long go when a new one is written


# Paths are plain strings here: importing pathlib (with urllib.parse and ipaddress) cost every
# run about as much as reading its cached tables.
def cache_dir() -> str | None:
    """$DSDIAG_CACHE_DIR, else $XDG_CACHE_HOME/dsdiag, else ~/.cache/dsdiag; None when
    DSDIAG_CACHE_DIR is `off` (no cache)."""
    explicit = os.environ.get("DSDIAG_CACHE_DIR", "")
    if explicit:
        return None if explicit.lower() == "off" else explicit
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):  # the XDG spec says to ignore a relative value
        home = os.path.expanduser("~")
        if home == "~":  # no HOME and no passwd entry
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "dsdiag")


def cache_key(*parts: bytes) -> str:
    """A 256-bit BLAKE2b digest of this dsdiag's version, the cache format and `parts` (each
    length-prefixed), in hex."""
    digest = blake2b(f"dsdiag {__version__} cache {FORMAT}\0".encode(), digest_size=32)
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _path(kind: str, key: str, suffix: str = ".json") -> str | None:
    directory = cache_dir()
    return os.path.join(directory, f"{kind}-{key[:32]}{suffix}") if directory else None


def read_cached(kind: str, key: str, binary: bool = False) -> Any:
    """The data cached for (kind, key), or None when there is none or it cannot be trusted.

    `binary`: data that write_cached kept with marshal (plain containers, ints and strings)."""
    if binary:
        blob = read_cached_bytes(kind, key, ".marshal")
        try:
            return None if blob is None else marshal.loads(blob)
        except (ValueError, EOFError, TypeError):  # truncated, damaged, a newer marshal format
            return None
    path = _path(kind, key)
    if path is None:
        return None
    try:
        import json  # only the json kinds need it; a run reads marshal ones
        with open(path, "rb") as fh:
            entry = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):  # missing, unreadable, truncated, not JSON
        return None
    # The full key inside guards against a file name collision and a copy from elsewhere.
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    return entry.get("data")


def read_cached_bytes(kind: str, key: str, suffix: str = ".bin") -> bytes | None:
    """The bytes cached for (kind, key) (a compiled database: no JSON, no base64 to undo), or
    None when there are none or they belong to another key."""
    path = _path(kind, key, suffix)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    head = key.encode() + b"\n"
    return data[len(head):] if data.startswith(head) else None


def write_cached_bytes(kind: str, key: str, data: bytes, suffix: str = ".bin") -> bool:
    """Store `data` for (kind, key) atomically, behind a line holding the full key."""
    return _write(kind, _path(kind, key, suffix), lambda fh: fh.write(key.encode() + b"\n" + data))


def write_cached(kind: str, key: str, data: Any, binary: bool = False) -> bool:
    """Store `data` for (kind, key) atomically; False (and nothing left behind) when it cannot.

    `binary`: kept with marshal, for read_cached(..., binary=True)."""
    if binary:
        try:
            blob = marshal.dumps(data)
        except ValueError:  # not marshallable
            return False
        return write_cached_bytes(kind, key, blob, ".marshal")
    import json
    return _write(kind, _path(kind, key), lambda fh: fh.write(
        json.dumps({"key": key, "data": data}, separators=(",", ":")).encode("utf-8")))


def _write(kind: str, path: str | None, write) -> bool:
    if path is None:
        return False
    tmp = None
    try:
        import tempfile  # only when writing: most runs only read
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        # A temporary file then os.replace: a reader sees the old file or the whole new one,
        # never a half-written one, even with several dsdiag processes starting at once.
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{kind}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError, ImportError):   # ImportError: stdlib unreadable
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
    _drop_stale(path, kind)
    return True


def _drop_stale(keep: str, kind: str) -> None:
    """Remove this kind's other cache files unused for STALE_DAYS (older rule sets, versions)."""
    cutoff = time.time() - STALE_DAYS * 86400
    directory, name = os.path.split(keep)
    suffix = os.path.splitext(name)[1]
    try:
        with os.scandir(directory) as entries:
            for other in entries:
                if (other.name != name and other.name.startswith(f"{kind}-")
                        and other.name.endswith(suffix) and other.stat().st_mtime < cutoff):
                    os.unlink(other.path)
    except OSError:
        pass
