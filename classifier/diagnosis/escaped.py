"""A whole log printed as one string, too long for one line: its escapes undone as it is read.

A logger or a program that prints a log as one JSON record (`{"log": "...\\n..."}`) or one
Python repr (`'Traceback ...\\n  File ...'`) puts all of it on one line. paste.split_escaped
splits such a line, but only a line the reader kept whole: past MAX_LINE (64 KiB, a log of a
few hundred lines) the reader cuts it, and the cut loses the end, where the failure is. So an
input whose first line runs past MAX_LINE and opens such a string is decoded here, on the
bytes, chunk by chunk (memory stays one chunk): the escapes inside the string become the
characters they stand for, its `\\n`s real newlines, and the record's framing around it is
dropped. Any other input passes through untouched (one search for a newline in its head).
"""

import re
from collections.abc import Iterable, Iterator

from classifier.precompiled import re_compile

MIN_ESCAPED_LINES = 3   # `\n` escapes the head must hold: a log, not one message that has one
_LONGEST_ESCAPE = 12    # `\ud83d\ude00`: a chunk's last bytes wait for the next chunk
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"b": b"\x08", b"f": b"\x0c", b"\\": b"\\",
           b"'": b"'", b'"': b'"', b"/": b"/"}
_JSON_STRING = re_compile(rb'"((?:[^"\\\n]|\\.)*)"?', re.DOTALL)


def _opening(head: bytes) -> tuple[int, bytes] | None:
    """Where the escaped log's string starts in a first line with no newline (the offset just
    past its opening quote) and its quote, or None when the line is no such string."""
    body = head.lstrip()
    skip = len(head) - len(body)
    if body[:1] in (b"{", b"["):
        # a record: the first of its strings that holds escaped newlines (a time or a level
        # field before it is framing, like the fields after it)
        for m in _JSON_STRING.finditer(body):
            if m.group(1).count(b"\\n") >= MIN_ESCAPED_LINES:
                return skip + m.start() + 1, b'"'
        return None
    start = 1 if body[:1] == b"b" else 0
    quote = body[start:start + 1]
    if quote not in (b"'", b'"') or body.count(b"\\n") < MIN_ESCAPED_LINES:
        return None
    return skip + start + 1, quote


def _escape_pattern(quote: bytes):
    return re.compile(rb"\\(?:u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|u([0-9a-fA-F]{4})"
                      rb"|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|(.))|" + re.escape(quote),
                      re.DOTALL | re.IGNORECASE)


def _character(m) -> bytes:
    high, low, four, eight, two, one = m.groups()
    if high:
        code = 0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00)
    else:
        hexa = four or eight or two
        if hexa is None:
            return _SIMPLE.get(one, m.group(0))
        code = int(hexa, 16)
    try:
        return chr(code).encode("utf-8", "replace")
    except ValueError:  # past U+10FFFF
        return "\ufffd".encode()


def unescaped(items: Iterable, max_line: int) -> Iterator:
    """The reader's blocks (and its (code, message) warnings, passed on in place), with a first
    line over `max_line` (read.MAX_LINE) that is one escaped log decoded into its lines."""
    items = iter(items)
    held, size = [], 0
    for item in items:
        held.append(item)
        if item.__class__ is tuple:
            continue
        if b"\n" in item:
            break
        size += len(item)
        if size > max_line:
            break
    blocks = [b for b in held if b.__class__ is not tuple]
    head = b"".join(blocks)[:max_line + 1]
    found = None if b"\n" in head or len(head) <= max_line else _opening(head)
    if found is None:
        yield from held
        yield from items
        return
    start, quote = found
    yield from _decoded(held, items, start, quote)


def _decoded(held, items, start, quote):
    """Yield the escaped string from offset `start` of the input decoded, then what follows
    the line it ends on as it is."""
    pattern = _escape_pattern(quote)
    carry = b""
    skipped = 0      # bytes of the framing before the string still to drop
    state = "string"
    ended = True     # whether what was decoded so far ends with a newline
    for item in _chain(held, items):
        if item.__class__ is tuple:
            yield item
            continue
        if skipped < start:
            cut = min(start - skipped, len(item))
            skipped += cut
            item = item[cut:]
        if state == "rest":
            yield item
            continue
        if state == "after":  # the framing after the string, up to the end of its line
            nl = item.find(b"\n")
            if nl >= 0:
                state = "rest"
                if nl + 1 < len(item):
                    yield item[nl + 1:]
            continue
        out, carry, state = _step(pattern, quote, carry + item, False, ended)
        ended = out[-1:] == b"\n" if out else ended
        yield out
    if state == "string" and carry:  # the input ends inside the string, or near its end
        yield _step(pattern, quote, carry, True, ended)[0]


def _step(pattern, quote, buf, final, ended):
    """(decoded bytes, bytes carried to the next chunk, state after) for one chunk of the
    string: its last escape-long bytes wait for the next, unless `final`; `ended`: whether
    the bytes decoded before it end with a newline."""
    out, at = [], 0
    safe = len(buf) if final else len(buf) - _LONGEST_ESCAPE
    for m in pattern.finditer(buf):
        if m.start() >= safe:
            break
        out.append(buf[at:m.start()])
        at = m.end()
        if m.group(0) == quote:
            last = next((piece for piece in reversed(out) if piece), None)
            if not (ended if last is None else last.endswith(b"\n")):  # the string's own last newline ends its last line
                out.append(b"\n")
            rest = buf[at:]
            nl = rest.find(b"\n")
            if nl >= 0:
                out.append(rest[nl + 1:])
            return b"".join(out), b"", "after" if nl < 0 else "rest"
        out.append(_character(m))
    keep = max(at, safe)
    out.append(buf[at:keep])
    if final and not (ended if not any(out) else b"".join(out).endswith(b"\n")):
        out.append(b"\n")
    return b"".join(out), buf[keep:], "string"


def _chain(held, items):
    yield from held
    yield from items
