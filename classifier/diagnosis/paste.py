"""Stage 2a: undo what copying a log into an issue, a chat or a log collector did to its lines.

Three things happen to a log on its way to a paste, and each is undone here, before prefixes
are peeled (normalize.py), because each is a property of the whole paste, not of one line:

- a terminal hard-wrapped it: every long line broken at the same column, the rest on the next
  line with no prefix. The column is found from the lines themselves (several lines end exactly
  at the longest length, none goes past it), and a line that reaches it is joined to the next.
- a logger or a program printed it as one string: a JSON record (`{"log": "...\\n..."}`) or a
  Python repr (`'Traceback ...\\n  File ...'`) holds the whole log on one line, `\\n` escaped.
- a collector put the same unknown label in front of every line (`stern`'s and `kubectl logs
  --all-containers`' `pod container `, a markdown quote `> `). A label the prefix peeler knows
  (rank, host, timestamp) is left to it: it carries the rank and host.
"""

import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from classifier.precompiled import re_compile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.read import RawLine

LOOK_AHEAD = 2200       # lines read before deciding (the prefilter's head and tail together)
MIN_WIDTH = 60          # terminals are wider; shorter equal lengths are chance
TERMINAL_WIDTHS = (80, 100, 120, 132, 160, 200)
MIN_WRAPPED = 3         # lines that must end exactly at the wrap column
PREFIX_SAMPLE = 20      # non-blank lines a learned prefix must head, all of them
MIN_PREFIX_LINES = 3
MAX_JOINED = 64 * 1024  # a wrapped line is never rebuilt past this

_ESCAPE = re_compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "/": "/", "0": "\0"}
# A short label before a repr that holds a whole output (`stderr: b'...'`, `Output: '...'`), as
# a wrapper prints subprocess.run's captured streams or a CalledProcessError's.
# Only a stream's name: a message's own repr (`KeyError: 'a\\nb'`) stays one line.
_LABELLED_REPR = re_compile(r"((?i:std(?:out|err)|output|err|out|logs?|captured std(?:out|err))"
                            r"(?: output)?[ \t]?[:=][ \t]?)(?=b?['\"])")
_DIGITS = re_compile(r"\d+")
_LABEL_LIKE = re_compile(r"[\d>|#-]")
_FRAME_END = re_compile(r'", line \d+, in [\w<>.]+$')
_NOT_CUT = frozenset("│┃║╮╯╗╝|")  # a box's right edge: a line ending in one is whole
# What goes on a token and never starts a line: `...unbound_buffer.cc:136` + `] Timed out`,
# `...ProcessGroupNCCL.cpp` + `:3376, internal error`
_CLOSES = frozenset("]),:;")
# A two-character operator (`nbytes) =` + `= 0`): no program breaks its own text inside one.
_OPERATORS = frozenset(("==", "!=", "<=", ">=", "->", "::", "&&", "||"))


def _unescape(s: str) -> str:
    def one(m):
        e = m.group(0)[1:]
        if len(e) > 1:
            return chr(int(e[1:], 16))
        return _SIMPLE.get(e, m.group(0))
    return _ESCAPE.sub(one, s)


def split_escaped(text: str) -> list[str] | None:
    """The lines of a log printed on one line as a JSON record or string literal, else None.

    Only a line that is one JSON value or one quoted literal is split here; its lines are
    numbered on from it (see _expanded)."""
    body = text.strip()
    if body[:1] in "{[\"":
        import json  # here: few lines get this far, and json costs every start ~1 ms
        try:
            value = json.loads(body)
        except ValueError:
            value = None
        if isinstance(value, dict):  # the record's longest string is the log it carries,
            value = max((v for v in value.values() if isinstance(v, str)), key=len, default="")
            if "\n" not in value.rstrip("\n"):  # unless it is one line (Docker's json-file)
                value = None
        if isinstance(value, str) and "\n" in value:
            return value.rstrip("\n").split("\n")
    head = []
    m = _LABELLED_REPR.match(body) if body[:1] in "CEOLSceols" else None
    if m and body.count("\\n", m.end(1)) >= 2:
        # a wrapper's `stderr: b'...'`: the label on a line of its own, then the repr's lines
        head, body = [m.group(1).rstrip()], body[m.end(1):]
    for opener in ("b'", 'b"', "'", '"'):  # a Python repr: drop its quotes
        if body.startswith(opener) and body.endswith(opener[-1]) and len(body) > len(opener):
            body = body[len(opener):-1]
            break
    else:  # an escaped traceback inside a message is normalize.py's (at its line's number)
        return None
    return head + _unescape(body).rstrip("\n").split("\n") if "\\n" in body else None


def _ruler(text: str) -> bool:
    """A line of one character repeated (`=====`): a ruler, never wrapped text."""
    return text.count(text[:1]) == len(text)  # str.count is a C loop; strip(c) is ~10x slower


_COLUMN_RULER = re_compile(r"\s{0,8}(?:[-=]{2,200}[ +|]{1,3}){2,100}[-=]{2,200}\s{0,8}")


def _column_ruler(text: str) -> bool:
    """A table's ruler under its header (`------------ ---------- --------`, sacct's, qstat's):
    the rows of such a table are padded to its width, none a piece of a wrapped line."""
    return _COLUMN_RULER.fullmatch(text) is not None


def _box_row(text: str) -> bool:
    """A table's row or rule that ends in its box edge (nvidia-smi's `|`, `+`): laid out to a
    width, never text a program wrapped itself."""
    return text[-1:] in _NOT_CUT or text[-1:] == "+"


def _uncut_end(text: str) -> bool:
    """A line that ends as a whole line does: in a box's edge or in padding (two blanks)."""
    return text[-1:] in _NOT_CUT or text[-2:].isspace()


def _wrapped_at_end(text: str, after: str) -> bool:
    """Whether `text`, as long as the widest line, reads as a piece a terminal broke off: it
    ends in text (not the padding of a right-padded paste, not a box's edge) and the next line
    goes on with something else than a sibling line of the same shape (`kernel: NVRM: Xid`)."""
    return (not _uncut_end(text) and after.strip() != "" and not _ruler(text)
            and not _same_start(text, after))


def wrap_width(texts: list[str]) -> int | None:
    """The column a terminal wrapped these lines at, or None.

    Wrapped text leaves several different lines ending exactly at the column, each followed
    by its rest, and none going past it. A log that was not wrapped has one longest line, or
    copies of one message from several ranks (the same once digits are ignored).
    """
    width = max((len(t) for t in texts), default=0)
    for _ in range(4):  # rulers are no text: the widest other line (a few ruler widths at most)
        if width < MIN_WIDTH or not all(_ruler(t) or not t.strip() for t in texts if len(t) == width):
            break
        width = max((len(t) for t in texts if len(t) < width), default=0)
    else:
        return None
    if width < MIN_WIDTH:
        return None
    if all(len(t) == width for t in texts if t.strip()):
        return None  # every line as wide (a padded table such as sacct's): no piece is a rest
    if any(_column_ruler(t) for t in texts if len(t) == width):
        return None  # a table's rows as wide as its ruler, under a shorter prompt or heading
    at = {_DIGITS.sub("", t) for t, after in zip(texts, texts[1:] + [""])
          if len(t) == width and _wrapped_at_end(t, after)}
    # a spike at the column: more lines end exactly there than at the 8 columns before it
    # together, per column, many times over (a wrapped line's last piece, after a piece at
    # the column, is no line of its own)
    # (a ruler, and a table's rows as wide as its column ruler, are laid out, not wrapped)
    close = {t for t, before in zip(texts, [""] + texts)
             if width - 8 <= len(t) < width and len(before) != width and not _box_row(t)}
    ruled = {len(t) for t in close if _column_ruler(t)}
    near = len({t for t in close if len(t) not in ruled and not _ruler(t.strip())})
    if len(at) >= MIN_WRAPPED and len(at) > near / 4:
        return width
    # Too few lines to tell by counting (a short paste, one message wrapped): a terminal's
    # usual width, that no line passes and lines break off at inside a word, is taken, unless
    # as many whole lines end just short of it (text its program wrapped itself).
    # A break inside a word (`out of memo` + `ry`) is a terminal's even so: a program that wraps
    # its own text breaks at blanks.
    if width in TERMINAL_WIDTHS:
        pieces = [(t, after) for t, after in zip(texts, texts[1:])
                  if len(t) == width and _broken_in_word(t, after)]
        if pieces and (2 * len(pieces) > near or any(_in_word(t, after) for t, after in pieces)):
            return width
    return None


def _same_start(text: str, other: str) -> bool:
    """Whether two lines begin alike, digits aside: the same label or message head."""
    return _DIGITS.sub("", text[:8]) == _DIGITS.sub("", other[:8])


def _broken_in_word(text: str, after: str) -> bool:
    """A line that stops inside a word and a next line that goes on with it (`timeo` + `ut:`),
    or at the one blank between two words (`is not` + ` equal`); a whole frame head (`...,
    line 422, in save`) is a line of its own."""
    a, b = text[-1:], after[:1]
    # letters on both sides, digits on both, or a letter then a digit (`float` + `16`, `cuda` +
    # `11.8`): `cpp:265` then `terminate` is two lines, and so is `compile` then `PyTorch` (a
    # lower-case letter never wraps into a capital)
    inside = (a.isalpha() and b.isalpha() and not (a.islower() and b.isupper())) or \
        (a.isdigit() and b.isdigit()) or (a.isalpha() and b.isdigit()) or (a == "_" and b.isalnum()) or (b == "_" and a.isalnum()) \
        or _joiner(text, b) or (a.isalnum() and b in _CLOSES) or a + b in _OPERATORS \
        or _before_joiner(text, after) or _in_quotes(text, after) \
        or (b == ">" and a.isalnum() and text.rfind("<") > text.rfind(">"))  # `<module` + `>`
    # A terminal breaks a sentence at its column, blank included: one blank, then a word that
    # goes on with it (`is not` + ` equal`, `failed to ` + `connect`, `cudaSuccess` + ` (2 vs.
    # 0)`), which neither an indented line (two blanks or more) nor a new message (none, or a
    # capital) starts with.
    at_blank = (b == " " and (after[1:2].isalnum() or (after[1:2] == "(" and after[2:3].isalnum()))
                and not a.isspace()) or \
        (a == " " and not text[-2:-1].isspace() and (b.isalnum() or b == "_") and not b.isupper())
    # A frame head that fills the column may be whole: its source line follows, indented.
    return (inside or at_blank) and _wrapped_at_end(text, after) and \
        not (_FRAME_END.search(text) and b.isspace())


def _in_word(text: str, after: str) -> bool:
    """Letters (or a letter and then digits) on both sides of the break: `memo` + `ry`, `float` + `16`."""
    a, b = text[-1:], after[:1]
    return a.isalpha() and (b.isdigit() or (b.isalpha() and a.islower() == b.islower()))


def _joiner(text: str, b: str) -> bool:
    """A break just after a dot, slash or `=` inside a token (`torch.cuda.` + `device_count()`,
    `/usr/lib/` + `python3`, `num_updates=` + `10000`): a program wrapping its own text breaks
    at blanks (and hyphens), never there, and a whole line seldom ends so."""
    a = text[-1:]
    return a in "./=" and text[-2:-1].isalnum() and (b.isalnum() or b == "_") and \
        not (a == "." and b.isupper())  # `... done.` + `Loading`: a sentence, then the next


def _before_joiner(text: str, after: str) -> bool:
    """A break just before a dot or hyphen inside a token (`127` + `.0.0.1`, `device_context` +
    `.cc:219]`, `nvcc` + `.exe`, `kernel-jxosi` + `-worker-0`): a line of its own seldom opens
    on one glued to a word, while a list's `- item` has a blank after it."""
    return text[-1:].isalnum() and after[:1] in ".-" and after[1:2].isalnum()


def _in_quotes(text: str, after: str) -> bool:
    """A break just inside a quoted name: after its opening quote (`(<class '` + `apex.optim`),
    or before its closing one (`grpo_trainer.py` + `", line 320,`, `nf4` + `'.`). A line that
    ends on a closing quote, or one that opens on a JSON key's quote, is whole."""
    a, b = text[-1:], after[:1]
    if a in "\"'" and b.isalnum():
        return not text[-2:-1].isalnum() and text[-2:-1] not in "\"'"
    return a.isalnum() and b in "\"'" and after[1:2] in ("", ",", ".", ")", "]", ":", ";", " ")


def learned_prefix(texts: list[str], known: Callable[[str], bool]) -> str | None:
    """A label every one of the first non-blank lines starts with, where `known(text)` (the
    peeler reads a label at the start of text) finds none.

    A log whose lines already start with a label the peeler reads (a timestamp, a rank) has
    no unknown one in front.
    """
    sample = [t for t in texts if len(t.strip()) > 1][:PREFIX_SAMPLE]  # not a bare `>`
    if any(known(t) for t in sample):
        return None
    if len(sample) < MIN_PREFIX_LINES:
        # A one-message paste whose collector labelled its final newline too: the bare label
        # line is the label itself, all of it, which no two lines of text share by chance.
        if len(sample) != 2 or len(texts) > 3:
            return None
        other, bare = sample
        if bare[-1:] != " " or len(bare) >= len(other) or not other.startswith(bare):
            return None
    first, last = min(sample), max(sample)
    n = 0
    while n < len(first) and n < len(last) and first[n] == last[n]:
        n += 1
    prefix = first[:first.rfind(" ", 0, n) + 1] if " " in first[:n] else ""
    # Collectors' labels hold a pod's hyphen or number, or are a quote's `>`: a shared head of
    # words (`NCCL INFO `, `CUDA `) is the messages' own.
    if not _LABEL_LIKE.search(prefix):
        return None
    # The shortest head whose removal leaves a label the peeler reads (`> [rank5]: `, `pod
    # container 2024-01-01 12:00:00 `) is the unknown label; the peeler takes the rest.
    for end in (i + 1 for i, c in enumerate(prefix) if c == " "):
        if prefix[:end].strip() and all(known(t[end:]) for t in sample):
            return prefix[:end]
    # Else a collector's label is a name: no colon (`host:pid:tid`, `rank 0:`), no bracket
    # left open (`[Rank `), and not the start of a numbered message (`rank 0 step 1`).
    if not prefix.strip() or not prefix[:1].strip() or ":" in prefix or known(prefix + "x") \
            or prefix.count("[") != prefix.count("]") or prefix.count("(") != prefix.count(")") \
            or all(t[len(prefix):len(prefix) + 1].isdigit() for t in sample):
        return None
    if n > len(prefix):  # the shared run goes on into the messages: a coincidence
        return None
    return prefix


def _expanded(raw_lines: Iterable["RawLine"], make) -> Iterator["RawLine"]:
    """The lines with a log printed on one line split into its lines. They are numbered on
    from it, and the lines after it with them, so that order and neighbours stay readable."""
    extra = 0
    for raw in raw_lines:
        parts = split_escaped(raw.text) if "\\n" in raw.text else None
        if parts is not None:
            for k, part in enumerate(parts):
                yield make(raw.source, raw.lineno + extra + k, part)
            extra += len(parts) - 1
        elif extra:
            yield make(raw.source, raw.lineno + extra, raw.text)
        else:
            yield raw


def repaired(raw_lines: Iterable["RawLine"], known: Callable[[str], bool],
             make: Callable[[str, int, str], "RawLine"], cut_lines: set | None = None) -> Iterator["RawLine"]:
    """Yield the lines of one input with wraps joined, one-line logs split and a learned
    label removed; `make(source, lineno, text)` builds a line, `known(text)` says whether
    the peeler reads a label at the start of a text; `cut_lines` gets the (source, lineno)
    of each line a viewer cut at a column (cut_width)."""
    it = _expanded(raw_lines, make)
    head = list(itertools.islice(it, LOOK_AHEAD))
    texts = [r.text.rstrip("\r") for r in head]
    prefix = learned_prefix(texts, known)
    cut = len(prefix) if prefix else 0
    body = [t[cut:] if prefix and t.startswith(prefix) else t for t in texts]
    width = wrap_width(body)
    # A viewer's cut falls at a column of the whole line, learned label included.
    column = cut_width(texts) if width is None and cut_lines is not None else None
    if prefix is None and width is None:
        if column is not None:
            yield from _marked(itertools.chain(head, it), column, cut_lines)
            return
        yield from head
        yield from it
        return

    def fixed(raw):
        text = raw.text.rstrip("\r")
        if prefix is not None:
            if text.startswith(prefix):
                text = text[cut:]
            elif text == prefix.rstrip():
                text = ""
        return raw if text == raw.text else make(raw.source, raw.lineno, text)

    # A wrapped line is yielded whole under its first piece's number (where the message starts),
    # the numbers of the other pieces as blank lines after it: every number still comes once
    # and in order, as the matcher (match.py), which reads a gap as lines the prefilter
    # skipped, expects.
    pieces = []
    lines = itertools.chain(head, it)
    for raw in (_marked(lines, column, cut_lines) if column is not None else lines):
        line = fixed(raw)
        if pieces:
            # A piece at the column may be a whole line that fills it: a next line that starts
            # as the first piece did (the next rank's, the next timestamp's, another host's
            # label) is a line of its own.
            if line.lineno == pieces[-1].lineno + 1 and sum(len(p.text) for p in pieces) < MAX_JOINED \
                    and not _same_start(pieces[0].text, line.text) \
                    and not (known(line.text) and known(pieces[0].text)) \
                    and not (line.text[:1].isspace() and _FRAME_END.search(pieces[-1].text)):
                # (a frame head whose last piece fills the column is whole: its code line,
                # indented, comes next)
                pieces.append(line)
                if len(line.text) == width:
                    continue
                yield from _joined(pieces, make)
                pieces = []
                continue
            yield from _joined(pieces, make)
            pieces = []
        if width is not None and len(line.text) == width and not _uncut_end(line.text) \
                and not _ruler(line.text):
            pieces = [line]
        else:
            yield line
    if pieces:
        yield from _joined(pieces, make)


def cut_width(texts: list[str]) -> int | None:
    """The column a log viewer cut every longer line at, their rest lost (not wrapped onto the
    next line: wrap_width found no wrap), or None: a usual terminal width of 100 or more that
    the widest lines reach and none passes, one of them stopping inside a word or a number."""
    width = max(map(len, texts), default=0)
    if width < 100 or width not in TERMINAL_WIDTHS:
        return None
    ends = [t for t in texts if len(t) == width and t[-1:].isalnum() and not _ruler(t)]
    return width if ends else None


def _marked(lines, column, cut_lines):
    """The lines as they are, each one that reaches the cut column counted in `cut_lines`."""
    for raw in lines:
        if len(raw.text) == column and raw.text[-1:].isalnum():
            cut_lines.add((raw.source, raw.lineno))
        yield raw


def _joined(pieces, make):
    """A wrapped line's pieces as one line under the first one's number, blanks after it."""
    yield make(pieces[0].source, pieces[0].lineno, "".join(p.text for p in pieces))
    for piece in pieces[1:]:
        yield make(piece.source, piece.lineno, "")
