"""Read a DeepSpeed config the way its two kinds of consumer do, keeping every key's line:col.

A config file has two readers with different grammars:
  - DeepSpeed itself, given a path, reads it with `hjson.load(..., object_pairs_hook=
    dict_raise_error_on_duplicate_keys)` (deepspeed/runtime/config.py, DeepSpeedConfig):
    comments, trailing commas, quoteless keys and strings are fine, a duplicate key is fatal;
  - HF Trainer / accelerate (transformers' HfDeepSpeedConfig) and most scripts use `json.load`:
    strict JSON, where a duplicate key silently keeps the last value.
This module parses the union of both (the hjson features DeepSpeed configs actually contain)
into a tree of `Node`s with positions, and records each hjson-only feature it met, so the
checker can say exactly which consumer breaks where. The verdict of the real readers (stdlib
json, and hjson when it is importable) is taken in `consumer_verdicts`.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 64  # objects / arrays inside each other
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")

# Feature kinds that hjson (DeepSpeed) accepts and json.load rejects.
HJSON_ONLY = {
    "comment": "a comment",
    "trailing_comma": "a trailing comma",
    "missing_comma": "a member separated by a newline instead of a comma",
    "quoteless_key": "an unquoted key",
    "quoteless_value": "an unquoted string value",
    "single_quoted": "a single-quoted string",
    "multiline_string": "a '''multi-line''' string",
}


@dataclass(slots=True)
class Node:
    """One JSON value: kind is object/array/string/number/bool/null."""
    kind: str
    value: object  # scalars: the Python value; object: list[Member]; array: list[Node]
    line: int
    col: int

    def to_python(self) -> Any:
        """Plain Python data; a duplicate key keeps its last value, as json.load does."""
        if self.kind == "object":
            return {m.key: m.value.to_python() for m in self.value}
        if self.kind == "array":
            return [item.to_python() for item in self.value]
        return self.value

    def member(self, key: str) -> "Member | None":
        """The last member named `key` of an object node, or None."""
        if self.kind != "object":
            return None
        found = None
        for m in self.value:
            if m.key == key:
                found = m
        return found


@dataclass(slots=True)
class Member:
    key: str
    line: int
    col: int
    value: Node


@dataclass(slots=True)
class Feature:
    """Something only hjson accepts, or a duplicate key."""
    kind: str
    line: int
    col: int
    detail: str = ""


class ConfigSyntaxError(Exception):
    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@dataclass(slots=True)
class Parsed:
    root: Node | None
    features: list[Feature] = field(default_factory=list)
    error: ConfigSyntaxError | None = None


_PUNCT = "{}[],:"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Reader:
    def __init__(self, text):
        self.text = text
        self.depth = 0
        self.pos = 0
        self.line = 1
        self.col = 1
        self.features = []

    # -- low level -------------------------------------------------------------------------
    def peek(self, n=0):
        i = self.pos + n
        return self.text[i] if i < len(self.text) else ""

    def advance(self, n=1):
        for _ in range(n):
            if self.pos >= len(self.text):
                return
            if self.text[self.pos] == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
            self.pos += 1

    def fail(self, message, line=None, col=None):
        raise ConfigSyntaxError(message, line or self.line, col or self.col)

    def skip_space(self):
        """Skip whitespace and comments; return True if a newline was crossed."""
        newline = False
        while self.pos < len(self.text):
            c = self.peek()
            if c == "\n":
                newline = True
                self.advance()
            elif c in " \t\r\ufeff":
                self.advance()
            elif c == "#" or (c == "/" and self.peek(1) == "/"):
                self.features.append(Feature("comment", self.line, self.col))
                while self.pos < len(self.text) and self.peek() != "\n":
                    self.advance()
            elif c == "/" and self.peek(1) == "*":
                self.features.append(Feature("comment", self.line, self.col))
                line, col = self.line, self.col
                end = self.text.find("*/", self.pos + 2)
                if end < 0:
                    self.fail("unterminated /* comment", line, col)
                while self.pos < end + 2:
                    newline = newline or self.peek() == "\n"
                    self.advance()
            else:
                break
        return newline

    # -- values ----------------------------------------------------------------------------
    def value(self, in_container=True):
        self.skip_space()
        line, col = self.line, self.col
        c = self.peek()
        if c == "{":
            return self.obj()
        if c == "[":
            return self.array()
        if c == '"':
            return Node("string", self.quoted('"'), line, col)
        if c == "'":
            if self.text.startswith("'''", self.pos):
                return Node("string", self.multiline(), line, col)
            self.features.append(Feature("single_quoted", line, col))
            return Node("string", self.quoted("'"), line, col)
        if not c:
            self.fail("unexpected end of file: a value is missing")
        if c in "]},:":
            self.fail(f"expected a value, found {c!r}")
        return self.literal_or_quoteless(line, col)

    def quoted(self, quote):
        line, col = self.line, self.col
        self.advance()
        out = []
        while True:
            c = self.peek()
            if not c or c == "\n":
                self.fail("unterminated string", line, col)
            if c == quote:
                self.advance()
                return "".join(out)
            if c == "\\":
                esc = self.peek(1)
                if esc in _ESCAPES or esc == "'":
                    out.append(_ESCAPES.get(esc, esc))
                    self.advance(2)
                elif esc == "u":
                    digits = self.text[self.pos + 2:self.pos + 6]
                    try:
                        out.append(chr(int(digits, 16)))
                    except ValueError:
                        self.fail("invalid \\u escape in string")
                    self.advance(6)
                else:
                    self.fail(f"invalid escape \\{esc} in string")
            else:
                out.append(c)
                self.advance()

    def multiline(self):
        line, col = self.line, self.col
        self.features.append(Feature("multiline_string", line, col))
        end = self.text.find("'''", self.pos + 3)
        if end < 0:
            self.fail("unterminated ''' string", line, col)
        body = self.text[self.pos + 3:end]
        self.advance(end + 3 - self.pos)
        return body.strip("\n")

    def literal_or_quoteless(self, line, col):
        # hjson: a value that is not a number/true/false/null up to the next separator is a
        # quoteless string running to the end of the line (commas included).
        end = self.pos
        while end < len(self.text) and self.text[end] not in ",]}\n#" and not \
                self.text.startswith("//", end) and not self.text.startswith("/*", end):
            end += 1
        token = self.text[self.pos:end].strip()
        literal = _literal(token)
        if literal is not None:
            self.advance(len(self.text[self.pos:end].rstrip()) if token else 0)
            kind, value = literal
            return Node(kind, value, line, col)
        eol = self.text.find("\n", self.pos)
        eol = len(self.text) if eol < 0 else eol
        raw = self.text[self.pos:eol].rstrip(" \t\r")
        self.features.append(Feature("quoteless_value", line, col, raw))
        self.advance(len(raw))
        return Node("string", raw, line, col)

    def obj(self):
        seen = {}

        def member():
            key_line, key_col = self.line, self.col
            key = self.key()
            self.skip_space()
            if self.peek() != ":":
                self.fail(f"expected ':' after key {key!r}")
            self.advance()
            value = self.value()
            if key in seen:
                self.features.append(Feature("duplicate_key", key_line, key_col,
                                             f"{key}\t{seen[key][0]}:{seen[key][1]}"))
            seen[key] = (key_line, key_col)
            return Member(key, key_line, key_col, value)

        return self._container("object", "{", "}", member)

    def array(self):
        return self._container("array", "[", "]", self.value)

    def _container(self, kind, opener, closer, read_item):
        """Read `opener item, item ... closer`; hjson lets newlines stand in for commas."""
        line, col = self.line, self.col
        self.depth += 1
        if self.depth > MAX_DEPTH:
            # real configs nest 3-4 levels; deeper text is not one, and would exhaust the stack
            self.fail(f"nested more than {MAX_DEPTH} levels deep: not a DeepSpeed config", line, col)
        self.advance()  # the opener
        items, sep = [], ""
        while True:
            self.skip_space()
            c = self.peek()
            if c == closer:
                self.advance()
                self.depth -= 1
                return Node(kind, items, line, col)
            if not c:
                self.fail(f"unexpected end of file: '{opener}' opened here is never closed", line, col)
            if items and sep != "comma":
                if sep != "newline":
                    self.fail(f"expected ',' or '{closer}' after the value, found {c!r}")
                self.features.append(Feature("missing_comma", self.line, self.col))
            items.append(read_item())
            sep = self.separator(closer)

    def separator(self, closer):
        """After a value: "comma", "newline" (hjson's separator) or "" (nothing before the next
        token); a comma right before the closer is recorded as trailing."""
        crossed = self.skip_space()
        if self.peek() == ",":
            line, col = self.line, self.col
            self.advance()
            self.skip_space()
            if self.peek() == closer:
                self.features.append(Feature("trailing_comma", line, col))
            return "comma"
        return "newline" if crossed else ""

    def key(self):
        c = self.peek()
        if c == '"':
            return self.quoted('"')
        if c == "'":
            self.features.append(Feature("single_quoted", self.line, self.col))
            return self.quoted("'")
        line, col = self.line, self.col
        start = self.pos
        while self.peek() and self.peek() not in _PUNCT and not self.peek().isspace():
            self.advance()
        if self.pos == start:
            self.fail(f"expected a key, found {c!r}")
        self.features.append(Feature("quoteless_key", line, col))
        return self.text[start:self.pos]


def _literal(token):
    if token == "true":
        return "bool", True
    if token == "false":
        return "bool", False
    if token == "null":
        return "null", None
    try:
        number = json.loads(token)
    except ValueError:
        if _NUMBER.fullmatch(token):  # past Python's 4,300-digit int limit: still a number
            return "number", float(token)
        return None
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        return "number", number
    return None


def parse_config(text: str) -> Parsed:
    """Parse config text into a `Parsed` tree (or the first fatal error), never raising."""
    reader = _Reader(text)
    try:
        reader.skip_space()
        if not reader.peek():
            raise ConfigSyntaxError("the file is empty", 1, 1)
        root = reader.value()
        reader.skip_space()
        if reader.peek():
            reader.fail(f"unexpected {reader.peek()!r} after the end of the config")
        return Parsed(root, reader.features)
    except ConfigSyntaxError as exc:
        return Parsed(None, reader.features, exc)


@dataclass(slots=True)
class Verdict:
    """Whether one consumer can read the text, and where it stops if not."""
    consumer: str
    ok: bool
    message: str = ""
    line: int = 0
    col: int = 0
    checked_by: str = ""  # the reader that gave the verdict


def json_verdict(text: str) -> Verdict:
    """What `json.load` (HF Trainer, accelerate, most scripts) makes of the text."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return Verdict("json.load", False, exc.msg, exc.lineno, exc.colno, "json")
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer; nesting past the stack
        return Verdict("json.load", False, _short(exc), 0, 0, "json")
    return Verdict("json.load", True, checked_by="json")


def _short(exc: BaseException) -> str:  # the first clause of a long message
    return (str(exc) or type(exc).__name__).split(";")[0][:160]


def deepspeed_verdict(text: str, parsed: Parsed) -> Verdict:
    """What DeepSpeed's own reader (hjson, duplicate keys fatal) makes of the text.

    Uses the real hjson when it is importable (it is a dependency of deepspeed); otherwise
    this module's own reading of the same grammar.
    """
    try:
        import hjson
    except ImportError:
        hjson = None
    if hjson is not None:
        def refuse_duplicates(pairs):
            keys = [k for k, _ in pairs]
            dups = sorted({k for k in keys if keys.count(k) > 1})
            if dups:
                raise ValueError(f"Duplicate keys in DeepSpeed config: {dups}")
            return dict(pairs)
        try:
            hjson.loads(text, object_pairs_hook=refuse_duplicates)
        except hjson.HjsonDecodeError as exc:
            return Verdict("deepspeed", False, exc.msg, exc.lineno, exc.colno, "hjson")
        except (ValueError, RecursionError) as exc:
            return Verdict("deepspeed", False, _short(exc), 0, 0, "hjson")
        return Verdict("deepspeed", True, checked_by="hjson")
    if parsed.error is not None:
        return Verdict("deepspeed", False, parsed.error.message, parsed.error.line,
                       parsed.error.col, "dsdiag")
    dups = [f for f in parsed.features if f.kind == "duplicate_key"]
    if dups:
        return Verdict("deepspeed", False, "Duplicate keys in DeepSpeed config: "
                       f"{sorted({d.detail.split(chr(9))[0] for d in dups})}", 0, 0, "dsdiag")
    return Verdict("deepspeed", True, checked_by="dsdiag")
