"""Built-in rule regexes rebuilt from their compiled code instead of parsed again.

The regex module parses a pattern in Python (about 0.4 ms each), and a rule-hit diagnosis
compiles tens of them: more than the rest of a small log's diagnosis. What the parser hands to
regex's C compiler depends only on the pattern and the regex release, so it is recorded once,
when the built-in rules are first validated (classifier.rules.load), kept in the rule cache
directory, and given straight to the C compiler by later runs. A pattern missing from the
table, another regex or Python release, or a table that cannot be read means `regex.compile`,
never an error.

Rebuilding needs only regex's C engine (`regex._regex`): it is loaded on its own, without the
package's pure-Python parser, whose import took ~5 ms of every run; `import regex` happens as
usual the moment a pattern has to be parsed.
"""

import marshal
import os
import sys
from array import array

# Each pattern's entry is kept as its own marshal blob, unpacked only when that pattern is
# compiled: a rule-hit run compiles ~50 of the ~950, and unpacking them all took ~1.5 ms.
KIND = "regex-code-raw"
_TABLE: dict | None = None  # pattern -> recorded arguments (encoded), once loaded
_KEY = ""                   # the cache key of the rule set the table belongs to
_ENGINE = None  # regex's C module, once loaded
_FILES = ("_main.py", "_regex_core.py")  # the parser, whose output the recorded code is
_WHERE = []  # [the package's directory or None], once looked up


def _machinery():
    """importlib.machinery's module, as the interpreter's import system already holds it
    (importing the importlib package would cost every start ~0.4 ms)."""
    module = sys.modules.get("_frozen_importlib_external")
    if module is None or not hasattr(module, "PathFinder") or not hasattr(module, "ExtensionFileLoader"):
        import importlib.machinery as module
    return module


def _package_dir() -> str | None:
    """Where `import regex` would find the package, found without importing it."""
    if not _WHERE:
        spec = _machinery().PathFinder.find_spec("regex")
        locations = spec.submodule_search_locations if spec is not None else None
        _WHERE.append(locations[0] if locations else None)
    return _WHERE[0]


def _engine():
    """regex's C module: loaded alone where the package lies on sys.path, else by `import regex`."""
    global _ENGINE
    if _ENGINE is None:
        module = sys.modules.get("regex._regex")
        if module is None:
            try:
                machinery = _machinery()
                spec = machinery.PathFinder.find_spec("regex._regex", [_package_dir()])
                if spec is None or not isinstance(spec.loader, machinery.ExtensionFileLoader):
                    raise ImportError("regex._regex is not an extension module here")
                module = spec.loader.create_module(spec)
                spec.loader.exec_module(module)
                # Kept out of sys.modules (loading registered it): a later `import regex` then
                # loads the package as usual, and its _regex shares these C types (Pattern).
                if sys.modules.get("regex._regex") is module:
                    del sys.modules["regex._regex"]
            except (ImportError, AttributeError, TypeError, OSError):
                module = None
        if module is None:
            from regex import _regex as module
        _ENGINE = module
    return _ENGINE


def release() -> bytes:
    """What the recorded code depends on besides the pattern: the regex and Python releases
    (the parser's files by size and mtime, so that regex's parser need not be imported)."""
    where = _package_dir()
    parts = []
    for name in _FILES:
        try:
            st = os.stat(os.path.join(where, name)) if where else None
        except OSError:
            st = None
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}" if st else f"{name}:?")
    if where is None or parts[0].endswith("?"):
        import regex  # not a plain package on sys.path: its version names the release
        parts.append(regex.__version__)
    return f"regex {' '.join(parts)} python {sys.version}".encode()


def record(patterns) -> dict[str, list]:
    """{pattern: encoded C-compiler arguments} for the patterns the parser takes; {} when this
    regex release's internals are not the ones this module knows."""
    import regex
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
    """compile()'s arguments in plain containers for marshal (the code as raw bytes), or None
    for a shape not handled here."""
    if args is None or len(args) != 11:
        return None
    pattern, flags, code, group_index, index_group, named_lists, list_indexes, \
        req_offset, req_chars, req_flags, group_count = args
    if named_lists or list_indexes or not isinstance(code, list):
        return None
    if index_group != {v: k for k, v in group_index.items()}:
        return None
    return [int(flags), array("I", code).tobytes(), sorted(group_index.items()),
            req_offset, list(req_chars) if isinstance(req_chars, tuple) else req_chars,
            int(req_flags), group_count]


def keep(key: str, patterns) -> None:
    """Record `patterns`' code for the rule set `key`, store it, and use it in this process."""
    from classifier.rules.cache import write_cached
    table = record(patterns)
    write_cached(KIND, key, {p: marshal.dumps(e) for p, e in table.items()}, binary=True)
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
            if isinstance(entry, bytes):  # as read from the cache (keep())
                entry = marshal.loads(entry)
            flags, code, groups, req_offset, req_chars, req_flags, group_count = entry
            group_index = {name: int(index) for name, index in groups}
            if isinstance(req_chars, list):
                req_chars = tuple(req_chars)
            return _engine().compile(pattern, flags, array("I", code).tolist(),
                                  group_index, {v: k for k, v in group_index.items()}, {}, [],
                                  req_offset, req_chars, req_flags, group_count)
        except (TypeError, ValueError, OverflowError, RuntimeError, EOFError):
            _TABLE.pop(pattern, None)  # damaged: parse it like any other pattern
    import regex
    return regex.compile(pattern)
