"""Our own `re` patterns rebuilt from their compiled code instead of parsed again.

A small log's diagnosis compiles about 150 patterns of dsdiag's own (prefix forms, launcher
lines, the keyword trie); Python's `re` parses each one in Python, which took longer than
reading and matching the log. The code the parser produces depends only on the pattern, its
flags and the Python release, so the first run records it in the cache directory
(classifier.rules.cache) and later runs hand it straight to the C engine (`_sre`), the same
call `re.compile` ends in. A pattern not yet recorded, another Python, an unreadable table or a
`re` whose internals differ mean a plain `re.compile`, never an error; the suite checks every
rebuilt pattern equals (code included) what `re.compile` makes.
"""

import marshal
import re
import sys
from array import array

KIND = "re-code-raw"  # each entry its own marshal blob (its code raw bytes), unpacked on use
# Module-level patterns and the word-start form of each rule keyword (classifier.diagnosis.match)
# are kept; patterns built from a log's own text are compiled with plain re.compile.
MAX_ENTRIES = 2048
# Longer code is not kept: every run reads the whole table. The vocabulary's failure-line
# pattern passed 8,192 words in round 36h and, parsed afresh every run, added ~9 ms to a 10 KB
# log (tests/test_startup.py now fails when a warm run parses any of our own patterns).
MAX_CODE = 16384
_table: dict | None = None  # "flags:pattern" -> recorded arguments, once read
_new: dict = {}             # recorded by this process, written at exit
_used: set = set()          # table entries this process rebuilt from


def _key() -> str:
    from classifier.rules.cache import cache_key
    return cache_key(f"python {sys.version} {getattr(re._compiler, 'MAGIC', '')}".encode())


def _load() -> dict:
    global _table
    if _table is None:
        from classifier.rules.cache import read_cached
        data = read_cached(KIND, _key(), binary=True)
        _table = data if isinstance(data, dict) else {}
    return _table


def _record(pattern: "str | bytes", flags: int):
    """What re's compiler hands to _sre.compile for this pattern (its code as raw bytes, kept
    by marshal as they are); or None."""
    from re import _compiler, _parser
    p = _parser.parse(pattern, flags)
    code = _compiler._code(p, flags)
    groupindex = dict(p.state.groupdict)
    if array("I").itemsize != _compiler._sre.CODESIZE or len(code) > MAX_CODE:
        return None
    return [flags | p.state.flags, array("I", code).tobytes(), p.state.groups - 1,
            sorted(groupindex.items())]


def _rebuild(pattern: "str | bytes", entry) -> "re.Pattern":
    if isinstance(entry, bytes):  # as kept in the cache (save())
        entry = marshal.loads(entry)
    flags, code, groups, groupindex = entry
    groupindex = {name: int(index) for name, index in groupindex}
    indexgroup = [None] * (groups + 1)
    for name, index in groupindex.items():
        indexgroup[index] = name
    return re._compiler._sre.compile(pattern, flags, array("I", code).tolist(),
                                     groups, groupindex, tuple(indexgroup))


def table_name(pattern: "str | bytes", flags: int) -> str:
    """The table's key for a pattern: `flags:pattern`, a bytes pattern's behind `b` (read as
    Latin-1, one character a byte), which no str pattern's key starts with."""
    if isinstance(pattern, bytes):
        return f"b{flags}:{pattern.decode('latin-1')}"
    return f"{flags}:{pattern}"


def from_table_name(name: str) -> "tuple[str | bytes, int]":
    """(pattern, flags) back from table_name's key."""
    flags, pattern = name.split(":", 1)
    if flags.startswith("b"):
        return pattern.encode("latin-1"), int(flags[1:])
    return pattern, int(flags)


def re_compile(pattern: "str | bytes", flags: int = 0) -> "re.Pattern":
    """`re.compile(pattern, flags)`, from recorded code where there is some."""
    flags = int(flags)
    if not isinstance(pattern, (str, bytes)):
        return re.compile(pattern, flags)
    name = table_name(pattern, flags)
    entry = _load().get(name)
    if entry is not None:
        try:
            rebuilt = _rebuild(pattern, entry)
            _used.add(name)
            return rebuilt
        except (AttributeError, TypeError, ValueError, OverflowError, RuntimeError, EOFError):
            _table.pop(name, None)  # a damaged entry: compile it as usual
    compiled = re.compile(pattern, flags)
    # Room is counted without the entries this process does not use: a full table is pruned
    # to this process's own at exit (save), so it never stops taking new patterns.
    if len(_used) + len(_new) < MAX_ENTRIES:
        try:
            entry = _record(pattern, flags)
        except (AttributeError, TypeError, ValueError, re.error):
            entry = None  # internals not as expected: this pattern is simply not kept
        if entry is not None:
            if not _new:
                import atexit
                atexit.register(save)
            _new[name] = entry
    return compiled


def save() -> bool:
    """Write what this process recorded, merged with the table read at start (at exit)."""
    if not _new:
        return False
    from classifier.rules.cache import write_cached
    table = _load()
    new = {name: marshal.dumps(entry) for name, entry in _new.items()}
    merged = {**table, **new}
    if len(merged) > MAX_ENTRIES:
        # The table is keyed by the Python release only, so it fills with the patterns of
        # earlier dsdiag releases and rule sets; keep what this process used.
        merged = {**{name: table[name] for name in _used if name in table}, **new}
    _new.clear()
    return write_cached(KIND, _key(), merged, binary=True)
