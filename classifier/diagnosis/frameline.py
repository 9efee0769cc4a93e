"""A traceback's frame lines in every form pastes show them, and the code lines that raise.

Kept apart from the collector (classifier.diagnosis.traceback): these are pure functions of one
message, asked of every line, so their answers are cached for the lines that repeat.
"""

from functools import lru_cache

from classifier.precompiled import re_compile

_PY_FRAME = re_compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:,? in (?P<func>\S+))?')
# faulthandler's dump (`Timeout (0:02:00)!`, `Thread 0x... (most recent call first):`) writes
# `File "x.py", line 50 in wait`, no comma before `in`, and lists the innermost frame first
_FAULT_FRAME = re_compile(r'^\s*File "[^"]+", line \d+ in \S')
# a frame line whose head the paste cut off (`/verl/protocol.py", line 491, in chunk`)
_PY_FRAME_CUT = re_compile(r'^(?P<file>[^"\s][^"]{0,1023}?\.py)", line (?P<line>\d+), in (?P<func>[\w<>.]+)\s*$')
_IPY_FRAME = re_compile(r"^(?P<file>(?:~|/|[A-Za-z]:\\|<ipython-input|File )(?:\S*|(?:\S+ ){1,8}?\S*\.pyx?)) in "
                        r"(?P<func>[\w<>.]+)(?:\(|$)")
# IPython 8's frame head: `File ~/x/module.py:1501, in Module._call_impl(self, *args)`, and
# `File /x/train.py:12` for a module's own lines. Its function is the qualified name; Python
# prints the last part, which is what rules name (`_env_rendezvous_handler.<locals>._get_env_or_raise`).
_IPY8_FRAME = re_compile(r"^File (?P<file>(?:~|/|[A-Za-z]:\\)(?:\S| (?=\S)){0,1024}?\.pyx?):(?P<line>\d+)"
                         r"(?:, in (?:[\w<>]+\.)*(?P<func>[\w<>]+)(?:\(|\s*$)|\s*$)")
# Colab links IPython's frame paths: `[/usr/lib/.../autocast_mode.py](https://localhost:8080/#) in
# __enter__(self)`, `[<ipython-input-3-d2a3>](https://localhost:8080/#) in <cell line: 1>()`.
_COLAB_FRAME = re_compile(r"^\[(?P<file>(?:~|/|[A-Za-z]:\\|<ipython-input)[^\]\s]{0,1024})\]"
                          r"\([^)\s]{0,300}\) in (?P<func><cell line: \d+>|[\w<>.]+)(?:\(|$)")
# rich's frame head `path.py:LINE in func` (before _IPY_FRAME, whose file would keep `:LINE`)
_RICH_FRAME = re_compile(r"^(?P<file>(?:/|~|[A-Za-z]:\\)\S*?\.py):(?P<line>\d+) in "
                         r"(?P<func>[\w<>.]+)\s*$")
_CPP_RAISED = re_compile(r"Exception raised from (?P<func>\S+) at (?P<file>[^\s:]+):(?P<line>\d+)")
_CPP_FRAME = re_compile(r"^frame #\d+: (?P<func>.+?)(?: \+ 0x[0-9a-f]+)? \((?:0x[0-9a-f]+ in )?"
                        r"(?P<file>[^)]*)\)")
# pytest's own frame lines (`--tb=long|short`): `tests/test_x.py:42: in test_step`.
_PYTEST_FRAME = re_compile(r"^(?P<file>[^\s:]{1,1024}\.py):(?P<line>\d+): in (?P<func>[\w<>.]+)$")

# A traceback cut above its last frame keeps that frame's code line and the exception under it
# (`assert self.n_batch % self.nminibatches == 0` / `AssertionError`); an issue title joins the
# two on one line (`assert x % y == 0 AssertionError`). The code line is an assert, a raise, a
# return, an assignment or a call: the shapes a raising line takes, and no log line's (a return
# of two bare words, `return code was 1`, is prose unless the first is await, not or lambda, and
# so is `return value: -9`).
STATEMENT = re_compile(r"""^(?:assert\s|raise\s+[A-Za-z_]|return\s+(?!(?!(?:await|not|lambda)\s)[A-Za-z_]\w*\s+[A-Za-z_]|[A-Za-z_]\w*\s*:)[\w(\[{-]|[A-Za-z_][\w.]{0,200}+(?:\[[^\]\n]{0,200}+\])*+"""
                       r"""(?:\s*+,\s*+[A-Za-z_][\w.]{0,200}+)*+\s*+[-+*/|&]?=[^=]|[A-Za-z_][\w.]{0,200}+\()""")


def is_statement(msg: str) -> bool:
    """Whether a message is shaped like a raising code line (the literal test first: most
    lines hold neither `=` nor `(` and are not asked the pattern)."""
    return ("=" in msg or "(" in msg or msg[:6] in ("assert", "raise ", "return")) \
        and STATEMENT.match(msg) is not None


# An assert (or a raise whose call is closed) and its exception, joined: the split point is the
# exception type right after the statement, with no blank at all after a closing parenthesis
# (`raise ValueError("...")ValueError: ...`, a paste that lost its newline).
JOINED = re_compile(r"""^(?P<src>(?:assert\s.{1,2000}?|raise\s.{1,2000}?["')]))(?:\s{1,4}|(?<=\)))"""
                    r"""(?P<exc>(?:[A-Za-z_]\w{0,60}\.){0,4}(?:AssertionError|[A-Z]\w{0,60}(?:Error|Exception))"""
                    r"""(?::\s.*)?)$""")


def frame_parts(msg: str, gist: str | None = None) -> tuple[str, str, int | None] | None:
    """(file, function, line) of a frame line, else None: a pure function of the message."""
    # What each frame form must hold: `File "`, ` in ` (pytest, IPython, Python), `frame #`
    # (c10), `Exception raised from` (c10's raise site); tested in `gist`, msg's if given.
    gist = msg if gist is None else gist
    if not ("File \"" in gist or " in " in gist or "frame #" in gist
            or "Exception raised from " in gist or gist[:5] == "File "):
        return None
    for pattern in (_PY_FRAME, _CPP_RAISED, _PYTEST_FRAME, _RICH_FRAME, _IPY8_FRAME, _IPY_FRAME,
                    _COLAB_FRAME, _CPP_FRAME, _PY_FRAME_CUT):
        m = pattern.search(msg) if pattern is _CPP_RAISED else pattern.match(msg)
        if m:
            d = m.groupdict()
            # A "line" of thousands of digits is no line number (and int() refuses it).
            line = int(d["line"]) if d.get("line") and len(d["line"]) < 10 else None
            return d["file"].replace("\\", "/"), d.get("func") or "<module>", line
    return None


# Every line is asked; lines repeat (ranks and jobs print the same chatter), so a short
# message's answer is kept for its next copies. A Frame is built anew each time (its source
# is filled in later).
kept_frame = lru_cache(maxsize=4096)(frame_parts)


# A raise or assert whose message goes on below (`raise ValueError(` at the arrow) and the context
# line IPython and rich print with its literal (`1518   "..."`): read when the message was cut.
_OPEN_RAISE = re_compile(r"^(?:raise\s+[A-Za-z_][\w.]{0,200}\s*\(|assert\s.{1,2000}?,\s*\()\s*$")
_CONTEXT_LITERAL = re_compile(r"""^\d{1,7}\s+(?:│\s*)*(?P<src>[rRfFbBuU]{0,2}["'].*)$""")
# A raise/assert with a literal right under a frame head cut before `line 75, in __init__`: the
# raising frame, its message lost (the statement alone proves nothing: threads quote code).
_CUT_FRAME_TAIL = re_compile(r"^line \d{1,7}, in [\w<>.]{1,200}$")
_LONE_RAISE = re_compile(r"""^(?:raise\s+[A-Za-z_][\w.]{0,200}\s*\(\s*|assert\s.{1,2000}?,\s*\(?\s*)"""
                         r"""(?:[rRfFbBuU]{1,2})?["']""")


def _indented(text: str, msg: str) -> bool:
    """Whether `msg` stands indented in its line `text`, behind whatever labels a launcher,
    logger or paste put in front (`[rank3]:`, `host-3: `, a timestamp and level, `> `, a JSON
    record's `{"log": "`): the labels' own separator is one blank, an indent two or a tab."""
    at = text.find(msg[:6])
    if at < 0:
        return text[:1] in (" ", "\t")
    head = text[:at]
    return head[-2:] == "  " or head[-1:] == "\t" or (head != "" and head.isspace())


def newest_last(raised):
    """The record with its frames innermost last, as Python prints them: faulthandler lists them innermost first."""
    frames = raised.frames
    if frames and all(f.at is not None and _FAULT_FRAME.match(f.at.msg) for f in frames):
        frames.reverse()
    return raised


class Frame:
    """One frame: where (file with forward slashes, function, line) and its source line."""

    __slots__ = ("file", "func", "line", "source", "at", "source_at")

    def __init__(self, file: str, func: str, line: int | None = None, source: str = "") -> None:
        self.file, self.func, self.line, self.source = file, func, line, source
        # the log lines that named it and showed its code (evidence of a frames-only diagnosis)
        self.at = self.source_at = None

    def __repr__(self) -> str:
        return f"Frame({self.file!r}, {self.func!r}, {self.line!r})"

    @property
    def where(self) -> str:
        """`path/to/file.py:function`, the form structure conditions match."""
        return f"{self.file}:{self.func}"
