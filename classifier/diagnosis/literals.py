"""One Hyperscan pass per message for the literal tests the per-line readers ask.

Every reader (culprit, topology, tracebacks, failure signals) asks each line a few `in`
tests before its regexes; together ~55 a line, about a tenth of a triage job's instructions.
Each reader registers its literals here at import (`bits`), and gets back a mask; a line's
`lits` (normalize.Line) holds the bits of the literals its message may hold, found by one
scan of one database for all of them, and a reader asks `lits & mask` before its own test.

A mask is a superset, never an answer: a clear bit means the literal is not in the message,
a set bit only that it may be. Lines keep `lits = ALL` (every test runs, as without this)
until the matcher's keyword finder has loaded Hyperscan (a small log never imports it), and
for messages this pass does not read exactly: long ones (their gist is not their message)
and, for caseless literals, non-ASCII ones (`str.lower` folds more than Hyperscan does).
"""

from collections.abc import Callable

ALL = -1
_KEPT = 4096  # masks kept (for messages shorter than normalize._GIST_FROM: all it reads)

_exprs: list[tuple[str, bool, bool]] = []  # (literal or pattern, caseless, regex), by bit
_bit: dict[tuple[str, bool, bool], int] = {}  # the same, to its bit
_caseless = 0  # the bits of caseless expressions


def bits(*literals: str, caseless: bool = False, regex: bool = False) -> int:
    """The mask of `literals` (ASCII; patterns when `regex`), registering those not yet known.

    Call at import: a mask is good only for databases built after it was registered."""
    global _caseless
    mask = 0
    for text in literals:  # escaped when the database is built: every run imports the readers
        key = (text, caseless, regex)
        bit = _bit.get(key)
        if bit is None:
            bit = _bit[key] = len(_exprs)
            _exprs.append(key)
            if caseless:
                _caseless |= 1 << bit
        mask |= 1 << bit
    return mask


def _collect(expr_id, _start, _end, _flags, found):
    found.append(expr_id)


def _scanner() -> Callable[[str], int] | None:
    """mask_of(msg) over a database of every literal registered, or None without Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    import re
    from classifier.diagnosis.hsdb import load_database
    from classifier.diagnosis.normalize import _GIST_FROM as long  # its gist is not itself
    n = len(_exprs)
    flags = [hyperscan.HS_FLAG_SINGLEMATCH | (hyperscan.HS_FLAG_CASELESS if caseless else 0)
             for _, caseless, _ in _exprs]
    exprs = [(text if regex else re.escape(text)).encode() for text, _, regex in _exprs]
    db = load_database(exprs, flags, "hyperscan-literals")
    if db is None:
        return None
    scratch, scan, kept, caseless = hyperscan.Scratch(db), db.scan, {}, _caseless

    def mask_of(msg: str) -> int:
        mask = kept.get(msg)
        if mask is not None:
            return mask
        if len(msg) >= long or len(_exprs) != n:  # a mask registered after the database
            return ALL
        found = []
        scan(msg.encode("utf-8", "surrogatepass"), match_event_handler=_collect, context=found,
             scratch=scratch)
        mask = 0
        for expr_id in found:
            mask |= 1 << expr_id
        if not msg.isascii():
            mask |= caseless
        if len(kept) >= _KEPT:
            kept.clear()
        kept[msg] = mask
        return mask

    return mask_of


_state: list = []  # [mask_of or None] once built


def masker() -> Callable[[str], int] | None:
    """The shared mask_of(msg), built on first call (None without the Hyperscan wheel)."""
    if not _state:
        _state.append(_scanner())
    return _state[0]
