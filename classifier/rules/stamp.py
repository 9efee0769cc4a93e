"""The built-in rule files' digest without hashing them: looked up by the files' stat.

Every run needs the rule set's content digest: it keys the cache of validated rules
(classifier.rules.cache) and is the version diagnoses show ("sha256:<12 hex>"). Reading and
hashing the ~680 KB of rule files and the validator's sources was about a tenth of a small
log's run. Instead the files' stat (path, size, mtime, ctime, inode, device) keys a small cache
entry holding the digest's results, written the last time they were hashed. Any write to a file
moves its ctime, which no tool can set back, so a matching stat means the very bytes hashed
then; a miss (or no cache) means reading and hashing them as before.
"""

import os
import time
from collections.abc import Sequence

from classifier.rules.cache import cache_key, read_cached, write_cached
from classifier.rules.model import GROUPS, pack_rule

_HERE = os.path.dirname(__file__)
# What decides the validated data besides the rule files: the validator, the taxonomy, the
# literal reader.
VALIDATOR_FILES = (os.path.join(_HERE, "load.py"), os.path.join(os.path.dirname(_HERE), "taxonomy.py"),
                   os.path.join(_HERE, "literal.py"))
# A file changed this recently may change again within the clock's granularity (a few ms)
# without its stat changing: such a stat is not recorded ("racily clean", as git says).
SETTLED_S = 2.0


def stat_key(paths: Sequence[str], extra: bytes) -> tuple[str, bool] | None:
    """(key, settled) from the stat of `paths` and the validator's files, with `extra`;
    settled: no file changed within SETTLED_S. None when one cannot be stat'ed."""
    parts, newest = [extra], 0
    for path in (*paths, *VALIDATOR_FILES):
        try:
            st = os.stat(path)
        except OSError:
            return None
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"
                     f"\0{st.st_dev}".encode())
    return cache_key(b"rule files by stat", *parts), time.time_ns() - newest > SETTLED_S * 1e9


def validator_sources() -> list[bytes]:
    """The bytes of VALIDATOR_FILES, for the rule cache's key."""
    out = []
    for path in VALIDATOR_FILES:
        with open(path, "rb") as fh:
            out.append(fh.read())
    return out


def _cached_shape_ok(entry):
    return isinstance(entry[0], str) and isinstance(entry[1]["category"], str) and all(
        isinstance(rule["id"], str) and isinstance(rule["title"], str)
        and isinstance(rule["packed"], bytes) and len(rule["sizes"]) == len(GROUPS)
        for rule in entry[1]["rules"])


# The validated rules are kept with marshal (half of json's time to read back, ~1 ms a run),
# in JSON's shapes (lists, not tuples), each rule packed (model.pack_rule). The kind names the
# format: a release that reads another format never finds this one's files.
RULES_KIND = "rules-packed"


def to_cache(key: str, entries: list) -> bool:
    """Keep [(file name, validated data)] for the rule set `key` (read back by from_cache)."""
    import json
    entries = json.loads(json.dumps(entries))
    for _, data in entries:
        data["rules"] = [pack_rule(rule) for rule in data["rules"]]
    return write_cached(RULES_KIND, key, entries, binary=True)


def from_cache(directory: str, paths: Sequence[str], key: str) -> list | None:
    """[(path, data)] of the built-in files from the cache, or None (missing, stale, damaged)."""
    entries = read_cached(RULES_KIND, key, binary=True)
    try:
        if [name for name, _ in entries] != [os.path.basename(path) for path in paths] or \
                not all(_cached_shape_ok(entry) for entry in entries):
            return None
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return [(os.path.join(directory, name), data) for name, data in entries]


def recall(key: str) -> tuple[str, str] | None:
    """(cache key, version) recorded for the stat `key`, or None."""
    entry = read_cached("rulestamp", key, binary=True)
    if isinstance(entry, dict) and isinstance(entry.get("key"), str) \
            and isinstance(entry.get("version"), str):
        return entry["key"], entry["version"]
    return None


def remember(key: str, cache: str, version: str) -> None:
    """Record the cache key and version that hashing the files gave, for their stat `key`."""
    write_cached("rulestamp", key, {"key": cache, "version": version}, binary=True)
