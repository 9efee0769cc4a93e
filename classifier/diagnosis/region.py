"""The failure region of a log: the lines the fallback model reads, masked of run-specific values.

A job's cause sits near its end: the last tracebacks and error lines. Healthy chatter (NCCL
INFO, step lines, progress bars) is skipped, and numbers, hex ids, addresses and directory
paths are masked, so the model learns the wording of a failure and not one run's values.

`model_text` is the one place that turns region lines into the text the model reads, for
training (`classifier/corpus/train.py`) and at run time (`diagnose._model_guess`) alike. Its
words come from exception lines and lines that say a failure (glog's E/F lines, `failed`),
masked and made visible whatever their spelling: an
identifier is kept and followed by its words (`WarmupDecayLR warmup decay lr`, `lr_scheduler lr
scheduler`). Every line, an exception's or not, adds the structure it shows: a traceback frame
its module and function (`frame_deepspeed_runtime_config`, `func_batch_assertion`), an
exception its type (`exc_outofmemoryerror`).
"""

import re
from collections import deque
from collections.abc import Iterable

from classifier.precompiled import re_compile
from classifier.vocabulary import EXCEPTION_LINE, EXCEPTION_SUFFIXES, OTHER_FAILURE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

LEAD = 2            # tail lines kept before its first failure marker
TAIL = 60           # last meaningful lines kept
EXCEPTIONS = 20     # exception lines kept (first ones are usually the cause, last the echo)

_ITS = re_compile(r"\bit/s\]")


def is_chatter(msg: str) -> bool:
    """Progress bars, INFO lines, metric dicts and blank lines: never part of a failure.

    Literal tests, not one alternation regex: this runs on every line and is 3x cheaper so."""
    return (" NCCL INFO " in msg or "[INFO]" in msg or "%|" in msg
            or msg.startswith(("INFO:", "INFO ", "{'loss'")) or msg.isspace()
            or ("it/s]" in msg and _ITS.search(msg) is not None))
_MASKS = (
    (re_compile(r"0x[0-9a-fA-F]+"), " hexid "),
    (re_compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), " ipaddr "),
    # keep a path's file name only; the look-behind starts a path only at its first character,
    # so a 64 KiB line without a slash is scanned once, not once per character
    # A path starts where no path character precedes it: starting again after each `/` of
    # a long run of them rescans the run (quadratic), and finds no other leftmost match.
    (re_compile(r"(?<![\w.~/-])(?:[\w.~-]*/)+([\w.-]+)"), r" \1 "),
    (re_compile(r"\d+(?:\.\d+)?"), " "),
)


def mask(text: str) -> str:
    """Replace run-specific values (hex ids, addresses, directories, numbers) in a line."""
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


class FailureRegion:
    """Collects, line by line, the tail and the exception lines of a job (bounded memory)."""

    def __init__(self) -> None:
        self.tail = deque(maxlen=TAIL)
        self.first_exceptions = []
        self.last_exceptions = deque(maxlen=EXCEPTIONS // 2)

    def feed(self, line: "Line") -> None:
        """Inspect one normalised line."""
        msg = line.msg
        if not msg or is_chatter(line.gist):  # the same answer, cheaper (normalize.gist)
            return
        self.tail.append(line)
        if EXCEPTION_LINE.match(msg):
            if len(self.first_exceptions) < EXCEPTIONS // 2:
                self.first_exceptions.append(line)
            else:
                self.last_exceptions.append(line)

    def lines(self) -> list["Line"]:
        """The region's lines: exception lines first, then the tail, each line once.

        The tail starts a few lines before its first failure marker: a short paste after a
        long healthy run must not be read with the run's last healthy lines mixed in.
        """
        tail = list(self.tail)
        first = next((i for i, line in enumerate(tail)
                      if EXCEPTION_LINE.match(line.msg) or OTHER_FAILURE.search(line.msg)), None)
        if first is not None:
            tail = tail[max(0, first - LEAD):]
        out, seen = [], set()
        for line in list(self.first_exceptions) + list(self.last_exceptions) + tail:
            key = (line.source, line.lineno)
            if key not in seen:
                seen.add(key)
                out.append(line)
        return out


# An identifier as the model's tokenizer sees it (dots, colons and dashes already split it).
_IDENT = re_compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The words of one identifier part: `WarmupDecayLR` -> Warmup, Decay, LR; `ProcessGroupNCCL`.
_WORD = re_compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# A traceback frame's tail, also when a wrapped paste cut the `File "` off its start: Python's
# `x.py", line 3, in f`, IPython's `x.py:69, in Cls.f(` and `x.py in f(`, rich's `x.py:2032 in
# step`, pytest's `x.py:42: in f`. The path is what precedes it back to a quote or a blank
# (found without a backtracking regex); of a qualified function, its last name.
_FRAME = re_compile(r'\.py(?:", line \d+,|:\d+,?|:\d+:|(?= in [\w<>.]+(?:\(|$))) in ([\w<>.]+)')
_PACKAGE_ROOTS = ("site-packages", "dist-packages")
_FRAME_DEPTH = 3    # path components kept of a frame outside an installed package
# An exception type anywhere in a line (`raise CalledProcessError(`, `torch.OutOfMemoryError:`).
_EXCEPTION_NAME = re_compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Z][A-Za-z0-9]*(?:"
                             + "|".join(EXCEPTION_SUFFIXES) + r"))(?=[:\s(]|$)")
# The class an exception line starts with (`torch._dynamo.exc.Unsupported: ...`).
_EXCEPTION_HEAD = re_compile(r"^(?:[A-Za-z_]\w{0,127}\.){0,32}([A-Za-z_]\w{0,127})(?::|$)")


def _words(identifier: str) -> list[str]:
    """`CUDA_VISIBLE_DEVICES` -> [cuda, visible, devices]; `SchedulerType` -> [scheduler, type]."""
    return [w.lower() for part in identifier.split("_") for w in _WORD.findall(part)]


def _split_identifiers(text: str) -> str:
    """Follow every compound identifier with its words, keeping the identifier itself."""
    def spell(m: re.Match) -> str:
        words = _words(m.group(0)) if len(m.group(0)) > 3 else []   # not units: GiB, MiB
        return m.group(0) + " " + " ".join(words) if len(words) > 1 else m.group(0)
    return _IDENT.sub(spell, text)


def _token(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower()


def _frame_module(path: str) -> str:
    """A frame's module: the path below site-packages, else its last few components."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p.strip(".")]
    for root in _PACKAGE_ROOTS:
        if root in parts:
            parts = parts[len(parts) - parts[::-1].index(root):]
            break
    else:
        parts = parts[-_FRAME_DEPTH:]
    if parts:
        parts[-1] = parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1]
    return "_".join(t for t in map(_token, parts) if t)


def _structure_tokens(msg: str) -> list[str]:
    """frame_/func_ tokens of a traceback frame and exc_ tokens of the exception types named."""
    out = []
    for m in _FRAME.finditer(msg):
        start = max(msg.rfind(c, 0, m.start()) for c in '" \t') + 1
        module, func = _frame_module(msg[start:m.start() + 3]), _token(m.group(1).rsplit(".", 1)[-1])
        out += ["frame_" + module] if module else []
        out += ["func_" + func] if func else []
    names = [m.group(1) for m in _EXCEPTION_NAME.finditer(msg)]
    if EXCEPTION_LINE.match(msg):
        head = _EXCEPTION_HEAD.match(msg)
        names += [head.group(1)] if head else []
    for name in dict.fromkeys(n.lower() for n in names):
        out.append("exc_" + name)
    return out


# A line that is no exception but says a failure in words: a glog error or fatal line (`E0727
# 11:38:35.76 22857 tcp_server_posix.c:284] bind addr=[::]:2223: Address already in use`, `F...
# Check failed: ...`), or one that says `failed`/`failure` (`pcclConnect failed with error:
# MASTER_CONNECTION_FAILED`). C++ runtimes and launchers tell their failure so, with no Python
# exception to carry the words.
_SAYS_FAILED = re_compile(r"^[EF]\d{4}\s|Check failed|(?i:\b(?:failed|failure)\b)")


def _reads_words(msg: str) -> bool:
    """True for a line whose words the model reads: an exception line, or a failure said in
    words that is no traceback frame or header."""
    return EXCEPTION_LINE.match(msg) is not None or (
        _SAYS_FAILED.search(msg) is not None and "Traceback" not in msg and _FRAME.search(msg) is None)


def _line_text(msg: str) -> str:
    text = _split_identifiers(mask(msg))
    extra = _structure_tokens(msg)
    return text + " " + " ".join(extra) if extra else text


def model_text(lines: Iterable["Line | str"]) -> str:
    """The text the fallback model reads, one line per region line (or message string).

    An exception line, and a line that says a failure in words (`_SAYS_FAILED`: glog E/F lines,
    `Check failed`, `failed`/`failure`), gives its words, masked (`mask`), every compound
    identifier followed by its words; every line gives the frame module/function and exception
    types it names, as `frame_*`, `func_*` and `exc_*` tokens. The words of the other lines
    (warnings, code context, progress) are left out: out of fold, among the failures no rule
    explains, they made the model sure of a category on user bugs and data errors. Training
    and run time both call this; the text of one line is `model_text([line])`, and the lines'
    texts joined by newlines are the whole.
    """
    return "\n".join(_line_text(msg) if _reads_words(msg) else " ".join(_structure_tokens(msg))
                     for msg in (line if isinstance(line, str) else line.msg for line in lines))


def region_text(lines: Iterable["Line"]) -> str:
    """The text the model reads for a job's region lines (the same as `model_text`)."""
    return model_text(lines)


def region_of_files(paths: Iterable[str]) -> list["Line"]:
    """Read a job's files and return its failure-region lines (used by training)."""
    from classifier.diagnosis.normalize import normalize
    from classifier.diagnosis.read import Warnings, read_lines
    region = FailureRegion()
    warnings = Warnings()
    for i, path in enumerate(paths):
        for line in normalize(read_lines(path, warnings), index=i):
            region.feed(line)
    return region.lines()
