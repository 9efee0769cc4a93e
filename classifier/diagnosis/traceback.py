"""Stage 3b: tracebacks as structure — each exception with its frames, chain, rank and host.

Real pastes often lack the one line a rule needs (cut before the message, a bare
`AssertionError`, `KeyError: 'LOCAL_RANK'`) while the frames still say where it was raised. The
collector reads, per input and rank (so interleaved ranks do not mix), the forms pastes take:

* Python: `Traceback (most recent call last):`, `File "x.py", line 3, in f` + its source line,
  chains ("During handling of the above exception ...", "The above exception was the direct
  cause ..."), the final `Type: message`;
* IPython / Jupyter: a `ValueError    Traceback (most recent call last)` header, frames
  `~/x.py in f(a, b)` or `<ipython-input-3-...> in <module>`, `---> 21 code` arrows;
* C++ (c10): `Exception raised from checkTimeout at /x/ProcessGroupNCCL.cpp:635`, `frame #N:`;
* torchelastic's error.json, once normalize has unescaped its `\\n` (see normalize);
* pytest: `path.py:42: in func` frames, the `E   Type: message` lines (normalize peels `E`);
* rich (transformers, accelerate): `/x/engine.py:2032 in step` frame heads inside the box
  (normalize strips its borders; a long path the box wrapped is glued back) and the `❱ 2032 │
  code` line that marks the frame's own source line among its context lines.

A `File "..."` line that a terminal hard-wrapped (`.../trl/trainer/grpo_` then `trainer.py",
line 817, in f`) is read as one frame: a frame head without its `", line N` is glued to the
next line of the same rank when the two together make a frame.

Processes sharing one terminal print the same traceback line by line into each other, with no
label to sort them by: the same header again while the first traceback has read at most a
frame or two (no message yet) is its copy. The record then takes each frame once and each code line once,
and the code lines go to its frames in order (a copy's code line lands after the other's next
frame); the copy's lines after the message are its echo.

A traceback that ends without its exception line (the paste stops, or the next one starts) is
kept with `cut=True`: its frames alone can still decide (classifier.diagnosis.structure).
Memory is bounded: MAX_FRAMES innermost frames per exception, MAX_RECORDS per job.
"""

from collections import deque

from classifier.precompiled import re_compile
from classifier.diagnosis.literals import bits
from classifier.diagnosis.frameline import (  # noqa: F401  (the frame forms, named here too)
    JOINED, is_statement, _COLAB_FRAME, _CPP_FRAME, _CPP_RAISED, _IPY_FRAME, _IPY8_FRAME, _PY_FRAME, _PY_FRAME_CUT,
    _PYTEST_FRAME, _RICH_FRAME, frame_parts as _frame_parts, kept_frame as _kept_frame,
    _CONTEXT_LITERAL, _CUT_FRAME_TAIL, _LONE_RAISE, _OPEN_RAISE, _indented, newest_last, Frame)
from classifier.vocabulary import EXCEPTION_LINE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

MAX_FRAMES = 40
MAX_RECORDS = 512
MAX_WRAPPED = 1024  # characters of a wrapped frame head kept for the next lines
TWIN_GAP = 4        # lines from one header to a copy's header, interleaved with it
TWIN_FRAMES = 2     # frames read before a copy's header shows (more: a new traceback)

_START = re_compile(r"Traceback \(most recent call last\):?\s*$")
_IPY_START = re_compile(r"^(?P<type>[A-Za-z_][\w.]{0,255})\s{2,}Traceback \(most recent call last\)")
_BARE_NAME = re_compile(r"^[A-Za-z_]\w{0,200}$")  # a function's name alone on its line
_PY_FRAME_HEAD = re_compile(r'^File "')  # the start of a frame line (a wrapped one lacks the rest)
_IPY_ARROW = re_compile(r"^-+> ?\d+\s+(?P<src>.+)$")
# the head's start when rich's box wrapped a long path, and its `❱ LINE │ │ code` source line
# (the box may break it inside the line number too: `.../config.py:65` + `6 in _configure_train_batch_size`)
_RICH_PATH_HEAD = re_compile(r"^(?:/|~|[A-Za-z]:\\)(?:[^\s:]{1,1024}|\S{1,1024}?\.py:\d+(?: in)?)$")
_RICH_ARROW = re_compile(r"^❱\s*\d+\s+(?:│\s*)*(?P<src>\S.*)$")
_CHAIN = re_compile(r"^During handling of the above exception|"
                    r"^The above exception was the direct cause of the following exception")
_EXC_PARTS = re_compile(r"^(?P<type>[A-Za-z_][\w.]{0,255})(?::\s?(?P<msg>.*))?$")
_NOISE = re_compile(r"^\s*[~^]+\s*$|^\s*$")
# What the tests in feed() need (literals.py): `Traceback`, and a frame form's literal.
_B_TRACEBACK = bits("Traceback")
_B_FRAME = bits('File "', " in ", "frame #", "Exception raised from ")


class Raised:
    """One exception of a job: its type and message (None when the paste was cut), frames."""

    __slots__ = ("source", "rank", "host", "first", "frames", "type", "message", "line",
                 "chained", "last")

    def __init__(self, source: str, rank: int | None, host: str | None, first: "Line",
                 type: str | None = None, message: str = "", line: "Line | None" = None,
                 chained: bool = False, last: "Line | None" = None) -> None:
        self.source, self.rank, self.host = source, rank, host
        self.first = first                                # the traceback's first line
        self.frames: deque = deque(maxlen=MAX_FRAMES)
        self.type = type
        self.message = message
        self.line = line        # the exception line, when the paste has it
        self.chained = chained  # raised while handling an earlier exception
        self.last = last        # the last line that belonged to it

    def __repr__(self) -> str:
        return f"Raised({self.type!r}, {self.message!r}, frames={len(self.frames)})"

    @property
    def cut(self) -> bool:
        """True when the traceback ends without its exception line."""
        return self.line is None

    @property
    def anchor(self) -> "Line":
        """The line a diagnosis points at: the exception line, else the last frame's line."""
        return self.line or self.last or self.first


class _Open:
    __slots__ = ("raised", "expect_source", "chain_next", "wrapped", "rich_head", "twin", "echo",
                 "open_raise")

    def __init__(self) -> None:
        self.raised: Raised | None = None
        self.expect_source = False
        self.chain_next = False
        self.twin = False   # the open record is read from copies interleaved line by line
        self.echo: Raised | None = None  # a closed twin record whose copies may still trail
        self.wrapped = ""   # a frame line's head that a terminal wrap cut off its `, line N`
        self.rich_head = ""  # a bare path that may be the start of a wrapped rich frame head
        self.open_raise = False  # the arrow's statement was `raise X(`: its literal may follow


def _same(a: Frame, b: Frame) -> bool:
    return (a.file, a.func, a.line) == (b.file, b.func, b.line)


class TracebackCollector:
    """Reads normalised lines one by one and keeps the exceptions they show (bounded)."""

    def __init__(self) -> None:
        self.records: list[Raised] = []
        # raising statements outside any traceback (_LONE_RAISE): read by raisesite.py only
        self.lone: list[Raised] = []
        self._lone_open: dict[tuple[str, int | None], Raised] = {}
        self._tail_at: dict[tuple[str, int | None], int] = {}  # the last cut frame tail's line
        self._open: dict[tuple[str, int | None], _Open] = {}
        # a code line outside a traceback, and the line number its exception line must have
        self._said: dict[tuple[str, int | None], tuple["Line", int]] = {}
        # a raising statement that opened its stream; read at finish() if nothing followed it
        self._opening: dict[tuple[str, int | None], "Line"] = {}

    def _close(self, state: _Open) -> None:
        if state.raised is not None and len(self.records) < MAX_RECORDS:
            self.records.append(newest_last(state.raised))
        state.echo = state.raised if state.twin else None
        state.raised = None
        state.expect_source = False
        state.twin = False

    def _start(self, state: _Open, line: "Line", etype: str | None = None) -> None:
        self._close(state)
        state.raised = Raised(line.source, line.rank, line.host, line, type=etype,
                              chained=state.chain_next, last=line)
        state.chain_next = False

    def _adopt(self, state: _Open, line: "Line") -> None:
        # A selection that starts after the first line's `[rank2]: ` leaves that frame unlabelled
        # while its code line and exception carry the label: the rank's first line continues it.
        bare = self._open.get((line.source, None))
        opened = bare.raised if bare is not None else None
        if opened is None or not bare.expect_source or opened.line is not None \
                or len(opened.frames) != 1 or opened.last is None or opened.last.lineno != line.lineno - 1:
            return
        opened.rank, state.raised, state.expect_source = line.rank, opened, bare.expect_source
        bare.raised, bare.expect_source = None, False

    def feed(self, line: "Line") -> None:
        """Inspect one normalised line."""
        msg = line.msg.strip()
        state = self._open.get((line.source, line.rank))
        if state is None:  # not setdefault: that builds an _Open for every line
            state = self._open[(line.source, line.rank)] = _Open()
            if line.rank is not None:
                self._adopt(state, line)
            if line.lineno == 1 and msg[:1] in "ra" and _LONE_RAISE.match(msg) and not JOINED.match(msg) \
                    and not _indented(line.text, msg):
                self._opening[(line.source, line.rank)] = line
        elif self._opening and msg:
            # a second rank's copy of the statement, written under the first, leaves it alone
            opening = self._opening.get((line.source, line.rank))
            if opening is None or opening.msg.strip() != msg:
                self._opening.pop((line.source, line.rank), None)
        if not msg:
            # A blank says nothing: not the end of a frame head a terminal wrapped (paste.py
            # leaves the numbers of a rejoined line's pieces blank) nor of a double-spaced paste.
            return
        # Literal tests first: every line comes here and few are part of a traceback. They read
        # the gist, the message with long runs of one character squeezed (normalize.gist).
        gist, lits = line.gist, line.lits
        started = lits & _B_TRACEBACK and "Traceback" in gist
        ipy = _IPY_START.match(msg) if started else None
        if ipy or (started and _START.search(msg)):
            open_ = state.raised
            if open_ is not None and len(open_.frames) <= TWIN_FRAMES \
                    and 0 < line.lineno - open_.first.lineno <= TWIN_GAP \
                    and open_.first.msg.strip() == msg:
                state.twin = True  # a copy's header: see the module docstring
                return
            self._start(state, line, ipy.group("type") if ipy else None)
            return
        if state.echo is not None and self._echoed(state, msg):
            return
        if msg[:1] in ("D", "T") and _CHAIN.match(msg):
            self._close(state)
            state.chain_next = True
            return
        raised = state.raised
        frame = None
        head, state.wrapped = state.wrapped, ""
        if head:
            # the wrap fell inside the path or the `, line N, in f` tail (after a comma: a space)
            joined = head + (" " if head.endswith(",") else "") + msg
            frame = self._frame(joined)
            if frame is not None:
                msg = joined
            elif len(joined) < MAX_WRAPPED and '", line ' not in joined \
                    and not EXCEPTION_LINE.match(msg):
                state.wrapped = joined  # a path longer than two terminal lines
                return
        rich_head, state.rich_head = state.rich_head, ""
        if frame is None and rich_head:
            # the box broke the path anywhere, or the head after its ` in`
            glued = rich_head + (" " if rich_head.endswith(" in") else "") + msg
            frame = self._frame(glued)
            if frame is not None:
                msg = glued
        if frame is None and lits & _B_FRAME:  # without one of its literals, no frame
            parts = _kept_frame(msg, gist) if len(msg) < 512 else _frame_parts(msg, gist)
            frame = Frame(*parts) if parts is not None else None
        if frame is None and (msg[:1] in ("/", "~") or msg[1:3] == ":\\") \
                and _RICH_PATH_HEAD.match(msg):
            state.rich_head = msg  # not held back: the line is read as itself too
        if frame is None and msg.startswith('File "'):  # _PY_FRAME_HEAD
            state.wrapped = msg[:MAX_WRAPPED]
            return
        lone = self._lone_open.pop((line.source, line.rank), None) if self._lone_open else None
        if raised is None:
            # A paste that starts mid-traceback, or a c10 error with no Python traceback
            # around it: its first frame opens the record.
            if frame is None:
                said, due = self._said.pop((line.source, line.rank), (None, 0)) if self._said else (None, 0)
                if said is not None and due == line.lineno and EXCEPTION_LINE.match(msg):
                    self._cut_above(said, said.msg.strip(), msg, line)
                elif said is not None and due == line.lineno and msg and _NOISE.match(msg):
                    self._said[(line.source, line.rank)] = (said, line.lineno + 1)  # 3.11's `~~^^~~` line
                elif lone is not None and EXCEPTION_LINE.match(msg):
                    # the statement's own exception line follows it
                    m = _EXC_PARTS.match(msg)
                    lone.type = m.group("type") if m else msg
                    lone.message = (m.group("msg") or "") if m else ""
                    lone.line = lone.last = line
                elif msg[:5] == "line " and _CUT_FRAME_TAIL.match(msg):
                    self._tail_at[(line.source, line.rank)] = line.lineno
                elif msg[:1] in ("r", "a") and len(self.lone) < MAX_RECORDS \
                        and self._tail_at.get((line.source, line.rank)) == line.lineno - 1 \
                        and _LONE_RAISE.match(msg):
                    lone = Raised(line.source, line.rank, line.host, line, last=line)
                    statement = Frame("<cut>", "<module>", None, msg)
                    statement.at = statement.source_at = line
                    lone.frames.append(statement)
                    self.lone.append(lone)
                    self._lone_open[(line.source, line.rank)] = lone
                elif is_statement(msg):
                    joined = JOINED.match(msg) if msg[:1] in ("a", "r") else None
                    if joined:
                        self._cut_above(line, joined.group("src"), joined.group("exc"), line)
                    else:
                        self._said[(line.source, line.rank)] = (line, line.lineno + 1)
                return
            self._start(state, line)
            raised = state.raised
        if frame is not None and state.twin:
            if not any(_same(f, frame) for f in raised.frames):
                frame.at = line
                raised.frames.append(frame)
            raised.last = line
            return
        if frame is not None:
            last = raised.frames[-1] if raised.frames else None
            if last is not None and (last.file, last.func, last.line) == (frame.file, frame.func, frame.line) \
                    and frame.line is not None:
                # ranks printing one traceback interleaved: the same frame again is a copy,
                # and whichever copy got the code line keeps it; once its code line was read,
                # the copies are read as twins (the other copy's code line comes next)
                raised.last = line
                state.expect_source = last.source == ""
                state.twin = not state.expect_source
                return
            frame.at = line
            raised.frames.append(frame)
            raised.last = line
            # a rich head is followed by context lines: its own line comes with a `❱`; an IPython
            # (or Colab) head by numbered ones, its own with an arrow: no plain line is its source
            state.expect_source = frame.source == "" and not _RICH_FRAME.match(msg) \
                and not (_COLAB_FRAME.match(msg) or _IPY8_FRAME.match(msg)
                         or (_IPY_FRAME.match(msg) and not _PYTEST_FRAME.match(msg)))
            return
        open_raise, state.open_raise = state.open_raise, False
        if open_raise and raised.frames:
            more = _CONTEXT_LITERAL.match(msg)
            if more:
                raised.frames[-1].source += " " + more.group("src").strip()
                raised.last = line
                return
        if msg[:1] == "❱" and raised.frames:
            arrow = _RICH_ARROW.match(msg)
            if arrow:
                raised.frames[-1].source = arrow.group("src").strip()
                raised.last = raised.frames[-1].source_at = line
                state.open_raise = _OPEN_RAISE.match(raised.frames[-1].source) is not None
                return
        arrow = _IPY_ARROW.match(msg)
        if arrow and raised.frames:
            raised.frames[-1].source = arrow.group("src").strip()
            raised.last = raised.frames[-1].source_at = line
            state.expect_source = False  # the context lines after the arrow are not its source
            state.open_raise = _OPEN_RAISE.match(raised.frames[-1].source) is not None
            return
        if EXCEPTION_LINE.match(msg):
            m = _EXC_PARTS.match(msg)
            raised.type = m.group("type") if m else msg
            raised.message = (m.group("msg") or "") if m else ""
            raised.line = line
            raised.last = line
            self._close(state)
            return
        if _NOISE.match(msg):
            return
        if state.twin:
            self._twin_source(raised, msg, line)
            return
        if state.expect_source and raised.frames:
            last = raised.frames[-1]
            if last.func == "<module>" and _BARE_NAME.match(msg) and last.at is not None \
                    and last.at.msg.endswith(", in"):
                # a wrap right after `in`: the function's name is this line, its code the next
                # (a frame head whose `<module>` a markdown renderer ate is followed by code)
                last.func, raised.last = msg, line
                return
            last.source = msg
            raised.last = raised.frames[-1].source_at = line
            state.expect_source = False

    def _cut_above(self, first: "Line", source: str, exc: str, line: "Line") -> None:
        """Keep a traceback cut above its last code line: that line, then its exception."""
        m = _EXC_PARTS.match(exc)
        if m is None or len(self.records) >= MAX_RECORDS:
            return
        raised = Raised(line.source, line.rank, line.host, first, m.group("type"),
                        m.group("msg") or "", line, last=line)
        frame = Frame("<cut>", "<module>", None, source)
        frame.at = frame.source_at = first
        raised.frames.append(frame)
        self.records.append(raised)

    @staticmethod
    def _twin_source(raised: Raised, msg: str, line: "Line") -> None:
        """A code line of interleaved copies: the first frame still without one takes it,
        unless a frame already has it (the other copy's)."""
        if any(f.source == msg for f in raised.frames):
            return
        for f in raised.frames:
            if not f.source and not f.file.startswith("<"):  # `<frozen ...>` shows no code
                f.source, f.source_at = msg, line
                raised.last = line
                return

    def _echoed(self, state: _Open, msg: str) -> bool:
        """Whether `msg` is a trailing line of a closed twin record's copy (then swallowed)."""
        done = state.echo
        parts = _kept_frame(msg) if len(msg) < 512 else _frame_parts(msg)
        if parts is not None:
            hit = any((f.file, f.func, f.line) == parts for f in done.frames)
        elif EXCEPTION_LINE.match(msg):
            hit = done.line is not None and msg == done.line.msg.strip()
            state.echo = None  # the copy's message ends it
            return hit
        else:
            hit = any(f.source == msg for f in done.frames) or bool(_NOISE.match(msg))
        if not hit:
            state.echo = None
        return hit

    @staticmethod
    def _frame(msg: str, gist: str | None = None) -> Frame | None:
        parts = _frame_parts(msg, gist)
        return Frame(*parts) if parts is not None else None

    def finish(self) -> list[Raised]:
        """Close what is still open (cut tracebacks) and return every exception, in order."""
        for state in self._open.values():
            self._close(state)
        # A stream that is one unindented raising statement (a reporter quoting the line that
        # raised): raisesite.py reads its literal as under a cut frame; indented is printed code.
        for line in self._opening.values():
            if len(self.lone) < MAX_RECORDS:
                lone = Raised(line.source, line.rank, line.host, line, last=line)
                statement = Frame("<cut>", "<module>", None, line.msg.strip())
                statement.at = statement.source_at = line
                lone.frames.append(statement)
                self.lone.append(lone)
        self._opening.clear()
        return self.records
