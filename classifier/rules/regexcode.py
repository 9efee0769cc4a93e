"""Built-in rule regexes rebuilt from their compiled code instead of parsed again.

The regex module parses a pattern in Python (about 0.4 ms each), and a rule-hit diagnosis
compiles tens of them: more than the rest of a small log's diagnosis. What the parser hands to
regex's C compiler depends only on the pattern and the regex release, so it is recorded once,
when the built-in rules are first validated (classifier.rules.load), kept in the rule cache
directory, and given straight to the C compiler by later runs. A pattern missing from the
table, another regex or Python release, or a table that cannot be read means `regex.compile`,
never an error.
"""

import sys
from array import array
from base64 import b64decode, b64encode

import regex

KIND = "regex-code"
_TABLE: dict | None = None  # pattern -> recorded arguments (encoded), once loaded
_KEY = ""                   # the cache key of the rule set the table belongs to


def release() -> bytes:
    """What the recorded code depends on besides the pattern: the regex and Python releases."""
    return f"regex {regex.__version__} python {sys.version}".encode()


def record(patterns) -> dict[str, list]:
    """{pattern: encoded C-compiler arguments} for the patterns the parser takes; {} when this
    regex release's internals are not the ones this module knows."""
    from regex import _main
    real = _main._regex

    class Recorder:  # stands in for regex's C module and keeps what compile() was given
        args = None

        def __getattr__(self, name):
            return getattr(real, name)

        def compile(self, *args):
            Recorder.args = args
            return real.compile(*args)

    table = {}
    _main._regex = Recorder()
    try:
        for pattern in patterns:
            Recorder.args = None
            _main._compile(pattern, 0, False, {}, False)  # uncached: always reaches compile()
            entry = _encode(Recorder.args)
            if entry is not None:
                table[pattern] = entry
    except (AttributeError, TypeError, ValueError, regex.error):
        return {}
    finally:
        _main._regex = real
    return table


def _encode(args):
    """JSON-safe form of compile()'s arguments, or None for a shape not handled here."""
    if args is None or len(args) != 11:
        return None
    pattern, flags, code, group_index, index_group, named_lists, list_indexes, \
        req_offset, req_chars, req_flags, group_count = args
    if named_lists or list_indexes or not isinstance(code, list):
        return None
    if index_group != {v: k for k, v in group_index.items()}:
        return None
    return [int(flags), b64encode(array("I", code).tobytes()).decode(), sorted(group_index.items()),
            req_offset, list(req_chars) if isinstance(req_chars, tuple) else req_chars,
            int(req_flags), group_count]


def keep(key: str, patterns) -> None:
    """Record `patterns`' code for the rule set `key`, store it, and use it in this process."""
    from classifier.rules.cache import write_cached
    table = record(patterns)
    write_cached(KIND, key, table, binary=True)
    use(key, table)


def use(key: str, table: dict) -> None:
    """Make the table just recorded for the rule set `key` the one compile() draws on."""
    global _TABLE, _KEY
    _TABLE, _KEY = table, key


def load(key: str) -> None:
    """Note which cached table belongs to the rules in use; it is read on the first compile."""
    global _TABLE, _KEY
    if key != _KEY:
        _TABLE, _KEY = None, key


def compile(pattern: str) -> "regex.Pattern":
    """`regex.compile(pattern)`, from the recorded code when the table has it."""
    global _TABLE
    if _TABLE is None:
        from classifier.rules.cache import read_cached
        cached = read_cached(KIND, _KEY, binary=True) if _KEY else None
        _TABLE = cached if isinstance(cached, dict) else {}
    entry = _TABLE.get(pattern)
    if entry is not None:
        try:
            flags, code, groups, req_offset, req_chars, req_flags, group_count = entry
            group_index = {name: int(index) for name, index in groups}
            if isinstance(req_chars, list):
                req_chars = tuple(req_chars)
            from regex import _regex
            return _regex.compile(pattern, flags, array("I", b64decode(code)).tolist(),
                                  group_index, {v: k for k, v in group_index.items()}, {}, [],
                                  req_offset, req_chars, req_flags, group_count)
        except (TypeError, ValueError, OverflowError, RuntimeError):
            _TABLE.pop(pattern, None)  # damaged: parse it like any other pattern
    return regex.compile(pattern)
