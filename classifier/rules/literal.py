"""The longest literal text every match of a rule pattern must contain.

A keyword line tries each of its rules' patterns on six windows of up to three lines; most
tries fail, and each costs a regex search. A pattern whose required literal is absent from
the five lines around the keyword cannot match any of those windows (each window is a
substring of them), so the matcher skips it without searching. The literal is read off the
pattern's source conservatively: only characters at the top level, outside every group,
class, quantifier and escape argument, and none at all for a pattern with a top-level
alternation or with verbose or other global flags. A pattern that opens on `(?i)` gets its
literal lower-cased and marked CASELESS (the matcher tests it on the lower-cased lines).
Anything this reader does not know ends a run, so it may find a shorter literal than there
is, never one that a match could lack.
"""

import re

MIN_LITERAL = 4  # shorter ones are in nearly every window anyway
_ESCAPED_LITERAL = frozenset(r"\.^$*+?()[]{}|/-'\"#:;,<>=!@%&~` ")
_QUANTIFIER = re.compile(r"[*+?]|\{\d*(?:,\d*)?\}")
_INLINE_FLAGS = re.compile(r"\(\?([a-zA-Z]+)\)")
_BRACED = re.compile(r"\{[^}]*\}")
_ESCAPE_ARG = {"x": re.compile(r"\{[^}]*\}|[0-9a-fA-F]{0,2}"), "u": re.compile(r"[0-9a-fA-F]{0,4}"),
               "U": re.compile(r"[0-9a-fA-F]{0,8}"), "N": _BRACED, "p": re.compile(r"\{[^}]*\}|\w?"),
               "P": re.compile(r"\{[^}]*\}|\w?"), "g": re.compile(r"<[^>]*>"),
               **{d: re.compile(r"[0-9]{0,2}") for d in "0123456789"}}


# Marks the literal of a `(?i)` pattern, lower-cased: any match holds it in some case, so a
# text whose lower-cased form lacks it cannot match (asked of ASCII texts only, where
# lower-casing is one character for one; `\u0130`.lower() is two).
CASELESS = "\0"
_CASELESS_HEAD = "(?i)"


def required_literal(pattern: str) -> str | None:
    """The longest run (at least MIN_LITERAL characters) of literal text any match contains;
    of a pattern that opens on `(?i)`, CASELESS and the run lower-cased (ASCII runs only)."""
    if pattern.startswith(_CASELESS_HEAD) and "(?" not in pattern[4:].replace("(?:", "").replace(
            "(?P<", "").replace("(?=", "").replace("(?!", "").replace("(?<", ""):
        found = _longest_run(pattern[len(_CASELESS_HEAD):])
        return CASELESS + found.lower() if found is not None and found.isascii() else None
    return _longest_run(pattern)


def _longest_run(pattern: str) -> str | None:
    tokens = _tokens(pattern) if "[:" not in pattern else None  # no POSIX classes read here
    if tokens is None:
        return None
    best, run = "", []
    for token in tokens:
        if token is None:
            if len(run) > len(best):
                best = "".join(run)
            run = []
        else:
            run.append(token)
    if len(run) > len(best):
        best = "".join(run)
    return best if len(best) >= MIN_LITERAL else None


def _tokens(pattern: str) -> list[str | None] | None:
    """Top-level characters as literals, anything else as None; None for a pattern with a
    top-level alternation or flags this reader leaves alone."""
    out: list[str | None] = []
    depth, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "(":
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags and set(flags.group(1)) & set("ixXuUaLVrwfF"):
                return None  # case, verbose, version or other global modes: not read here
            depth += 1
            out.append(None)
            i += 1
            continue
        if c == ")":
            depth -= 1
            out.append(None)
            i += 1
        elif c == "[":
            i = _class_end(pattern, i)
            out.append(None)
        elif c == "|":
            if depth == 0:
                return None
            i += 1
        elif c == "\\":
            nxt = pattern[i + 1:i + 2]
            out.append(nxt if depth == 0 and nxt in _ESCAPED_LITERAL else None)
            i += 2
            # an escape's argument (`\u00e9`, `\x41`, `\N{...}`, `\p{L}`, `\g<1>`, `\12`) is no literal
            arg = _ESCAPE_ARG.get(nxt)
            if arg is not None:
                m = arg.match(pattern, i)
                i = m.end() if m else i
        elif c in ".^$":
            out.append(None)
            i += 1
        elif c in "*+?{":
            out.append(None)  # a quantifier not after a literal (after a group or class)
            m = _QUANTIFIER.match(pattern, i)
            i = m.end() if m else i + 1
        else:
            out.append(c if depth == 0 else None)
            i += 1
        # A quantified character may be absent or repeated: it leaves the run.
        m = _QUANTIFIER.match(pattern, i)
        if m and out:
            out[-1] = None
            i = m.end()
            if pattern[i:i + 1] in ("?", "+"):  # lazy or possessive
                i += 1
    return out


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that starts at pattern[i] == '[' (POSIX classes
    inside it, `[[:alpha:]_]`, included)."""
    j = i + 1
    if pattern[j:j + 1] == "^":
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        if pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            j = end + 2 if end != -1 else j + 1
            continue
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def greedy_twin(pattern: str) -> str:
    """`pattern` with every lazy quantifier made greedy (`{0,300}?` -> `{0,300}`, `*?` -> `*`).

    Both accept the same texts, and the same prefixes of texts; only which match is reported
    differs. The twin is what a partial search is asked: the `regex` module's partial search
    (3.11, 2026.x) reports a lazy repeat of a negated class (`[^\\s(]{0,300}?bar`) as a match
    that could go on past a character the class excludes (`foo x(abc`), so a cut last line
    would seem to be the start of a message it can no longer become.
    """
    if "?" not in pattern or "(?x" in pattern:  # verbose patterns' comments are not read here
        return pattern
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        start = i
        if c == "\\":
            i += 2
            arg = _ESCAPE_ARG.get(pattern[i - 1:i])
            if arg is not None:
                m = arg.match(pattern, i)
                i = m.end() if m else i
            out.append(pattern[start:i])
            continue  # a quantifier may follow: read on the next turn
        if c == "[":
            i = _class_end(pattern, i)
            out.append(pattern[start:i])
            continue
        if c == "(" and pattern[i + 1:i + 2] == "?":
            out.append("(?")  # a group's `?` opens its kind, no quantifier
            i += 2
            continue
        m = _QUANTIFIER.match(pattern, i)
        if m:
            out.append(m.group())
            i = m.end()
            if pattern[i:i + 1] == "?":
                i += 1  # the lazy mark, dropped
            continue
        out.append(c)
        i += 1
    return "".join(out)
