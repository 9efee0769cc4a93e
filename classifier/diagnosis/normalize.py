"""Stage 2: strip what launchers and terminals wrap around a message, keeping where it came from.

Rules are written against the bare message. Everything a launcher, logger or terminal adds in
front of it — rank labels, host labels, timestamps, colour codes, rich's traceback box — is
removed here, and the rank and time it carried are kept on the line.

Labels nest: `srun -l` puts its task id in front of whatever the task printed, and a torchrun
task prints `[rank13]:` in front of each worker's line, so `1: [rank13]: RuntimeError` is rank 13
of task 1. The innermost rank label is the rank (it is the closest to the process that wrote the
line); an outer one is kept as the line's `task`.
"""

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from classifier.precompiled import re_compile
from classifier.diagnosis.paste import _unescape, repaired
from classifier.diagnosis.read import RawLine
from classifier.diagnosis.records import unwrap
from classifier.diagnosis.stamps import (_CLOCK_TS, _DMESG_HUMAN_TS, _DMESG_TS, _DMY_FIRST, _DMY_TS, _EPOCH_END,
                                         _ISO_TS, _SYSLOG_TS, dmy_seconds, iso_seconds, syslog_seconds)
from classifier.diagnosis.typography import plain_chars

# CSI sequences (colours, cursor moves) and OSC sequences (terminal titles, hyperlinks).
_ANSI = re_compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# srun -l / --label: `3: ` (possibly right-aligned), the task id. `(?=(\s*))\1` takes the blanks
# once, atomically: a plain `\s*` gave them back one at a time (0.2 ms for 4,000 spaces).
_SRUN_LABEL = re_compile(r"(?=(\s*))\1(?P<rank>\d{1,5}):\s")
# Rank and host labels, each anchored at the start of what is left of the line.
_RANK_PREFIXES = (
    # torch >= 2.2 stderr redirection and torchrun --tee: `[rank3]:`, `[default3]:`, and a
    # role and local rank split by a colon, the role empty when the launcher names none (`[:3]:`)
    re_compile(r"\[(?:rank|default|worker|trainer|local_rank)?:?(?P<rank>\d+)\]:\s?"),
    # Open MPI --tag-output: `[1,3]<stderr>:` (job id, rank); horovodrun: `[3]<stderr>:`
    re_compile(r"\[(?:\d+,)?(?P<rank>\d+)\]<std(?:out|err|diag)>:\s?"),
    _SRUN_LABEL,
    # pdsh (DeepSpeed multi-node launcher): `worker-1: `, `10.0.0.5: `, `localhost: `. A host
    # label needs a digit or a hyphen before any dot, so `collect2: error`, `libcudart.so.11.0: x`
    # and NVIDIA's tools (`nvidia-container-cli: x`) keep their first word. Alone, a blank.
    re_compile(r"(?P<host>localhost|\d{1,3}(?:\.\d{1,3}){3}"
               r"|(?!collect2:|nvidia-(?:container-[a-z-]+|ctk|smi)(?:\.real)?:)"
               r"(?=[a-z0-9-]{0,63}[\d-])[a-z][a-z0-9-]{0,62}(?:\.[a-z][a-z0-9-]{0,62}){0,16}):(?:\s|$)"),
    # Ray Train workers: `(RayTrainWorker pid=12345, ip=10.0.0.1) `
    re_compile(r"\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)\s"),
    # kubectl logs --prefix: `[pod/trainer-0/pytorch] `; the pod is where the line ran
    re_compile(r"\[pod/(?P<host>[^/\]\s]+)(?:/[^\]\s]*)?\]\s"),
    # docker compose: `trainer-1  | ` (a service and its replica number) or a `container_name`
    # (`qanything-container-local  | `): a hyphen or underscore inside, so a table's `0 | model`
    # or `loss | 0.5` row keeps its first cell
    re_compile(r"(?P<host>[a-z0-9][a-z0-9.]{0,62}[-_][\w.-]{0,190})\s+\|\s"),
    # a markdown quote, `> ` (nested `> > `), around a paste of any length; `>>> ` is a prompt
    re_compile(r">(?:[ \t]|$)(?:>(?:[ \t]|$)| )*"),
)

# pytest's failure report marks the exception's lines `E   RuntimeError: ...` (continuations
# `E       ...`): a marker in front of the message, like a rank label.
_PYTEST_E = re_compile(r"E(?: {3,}|\t)(?=\S)")

# journald's / syslog's header after the stamp: the host (after an ISO stamp; the syslog stamp takes it itself) and the
# writer with its pid (`gpu-node-07 train.sh[48213]: `, `python3[812]: `); only right after a stamp, only with `[pid]:`.
_JOURNAL_HEAD = re_compile(r"(?:[\w.-]{1,64} )?[\w.@/:-]{1,64}\[\d{1,10}\]:(?:\s|$)")
# A logger's bare level between its timestamp and the message (`2024-01-01 12:00:00 | INFO | `, `...Z ERROR `): peeled
# only right after a timestamp, so a message's own `ERROR:` stays (and DeepSpeed's `[INFO] [launch.py:145:main]`, which
# rules read). A pipe logger goes on with its name (FastChat's `| ERROR | stderr | `), Python's `%(asctime)s -
# %(levelname)s - %(message)s` has dashes; a message's own dashes (`INFO ---> 13 from`) and table row (`INFO | a |`) stay.
_LEVEL = re_compile(r"(?:INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL|PANIC|TRACE|NOTICE)(?:\s+(?:\|\s)?(?=\|.*\|\s*$)"
                    r"|\s+\|\s(?:[\w.-]{1,64}\s\|\s)?|\s-\s|\s+(?=[^\s|-]|-(?!\s))|\s*\|?$)")
# vLLM's logger head (`ERROR 04-28 15:55:45 worker_base.py:157] `; after 0.8 `[core.py:588] `): peeled, a traceback reads
_VLLM_HEAD = re_compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? \[?[\w./-]{1,200}:\d{1,6}\] ?")
_VLLM_FIRST, _VLLM_THIRD = frozenset("DIWEC"), frozenset("BFRI")  # its levels' first and third letters: cheap tests first

# A tqdm bar (` 45%|████▌     | 45/100 [00:10<00:12,  4.4it/s]`), whole or heading a segment.
_BAR = (r"\s*(?:[^%|]{0,80}:\s*)?\d{1,3}%\|[^|]{0,120}\|\s*[\d.]+[kMG]?/[\d.]+[kMG]?\w*"
        r"(?:\s*\[[^\]]{0,120}\])?")
_PROGRESS = re_compile(_BAR + r"\s*")
_PROGRESS_HEAD = re_compile(r"^" + _BAR)

_BOX_LEFT = re_compile(r"(?<!\s)(?=(\s*))\1[│┃║]\s?")  # rich's traceback panel `│ x │`; the lookbehind keeps search() linear
_BOX_RIGHT = re_compile(r"(?<!\s)\s*[│┃║]\s*$")  # starts at a run of spaces, not inside it: linear
_BOLD_HEAD = re_compile(r"[A-Za-z][\w.]{0,80}(?::|\s)")  # bold around an error line or a sentence
# Ray's log dedup appends ` [repeated 6x across cluster]` (the first time with a note on
# RAY_DEDUP_LOGS) to any line: not the message's end, which `$` patterns and cut tests read.
_RAY_DEDUP = re_compile(r"[ \t]{0,8}\[repeated \d{1,9}x across cluster\](?:\s*\(Ray deduplicates[^()]{0,400}\))?\s*$")
# Two ranks writing the same exception line at once interleave it: `ImportErrorImportError: :
# cannot import name 'x'`, `RuntimeErrorRuntimeError: CUDA error: ...`. One copy is the message.
_DOUBLED_HEAD = re_compile(r"(?P<head>[A-Za-z_][\w.]{2,80}?(?:Error|Exception))(?P=head)(?:\s?:){1,2}\s?")

# Rules see a line's first 8 KiB: every message they know fits, and no 64 KiB line of noise
# can make a three-line window cost megabytes.
MATCH_LIMIT = 8 * 1024

# A line's gist: its message with every long run of one character cut to SQUEEZED of them. The
# witnesses test each line for dozens of literals, and `str.find` reads a long run of a character
# its needle holds (`o` in `timeout`, or `/`, sharing `o`'s slot in CPython's filter) one position
# per needle: 30 KB of `/` cost ~0.6 ms a line. A literal whose runs are at most SQUEEZED long is
# in the gist if and only if it is in the message, so the literal tests read the gist.
RUN_STEP = 32   # the message is sampled every RUN_STEP characters
SQUEEZED = 8
_SAME3 = re_compile(r"(.)\1\1", re.DOTALL)  # three equal samples in a row
_RUN_OF: dict[str, "re.Pattern"] = {}       # character -> the pattern of its squeezable runs
_GIST_FROM = 8 * RUN_STEP  # shorter messages are their own gist


def gist(msg: str) -> str:
    """`msg` with runs of one character cut to SQUEEZED of it: every run of 3 * RUN_STEP or more
    (it covers three samples in a row) and any run past RUN_STEP around those samples.

    A line without three equal samples in a row costs a slice and one regex pass over
    1/RUN_STEP of it; each such run of samples, one substitution around them.
    """
    n = len(msg)
    if n < _GIST_FROM:
        return msg
    sample = msg[::RUN_STEP]
    m = _SAME3.search(sample)
    if m is None:
        return msg
    out, done = [], 0
    while m is not None:
        c, first = m.group(1), m.start()
        rest = sample[first:]
        last = first + len(rest) - len(rest.lstrip(c))  # the sample after the run
        # The samples around the run hold another character: a run of `c` through these
        # samples starts after the one before and ends before the one after.
        lo, hi = max(done, (first - 1) * RUN_STEP + 1), min(n, last * RUN_STEP)
        pattern = _RUN_OF.get(c)
        if pattern is None:
            # a literal prefix: _sre finds it with its prefix table, never retrying inside a run
            pattern = _RUN_OF[c] = re.compile(re.escape(c * (RUN_STEP + 1)) + re.escape(c) + "*")
        out.append(msg[done:lo])
        out.append(pattern.sub(c * SQUEEZED, msg[lo:hi]))
        done = hi
        m = _SAME3.search(sample, last)
    out.append(msg[done:])
    return "".join(out)


class Line:
    """A log line after normalisation: where it came from, its rank and time, its message.

    A plain class rather than a dataclass: `dataclasses` imports `inspect`, which costs a
    small log's diagnosis more than its lines do.
    """

    __slots__ = ("source", "lineno", "text", "msg", "rank", "host", "ts", "index", "task", "gist",
                 "lits")

    def __init__(self, source: str, lineno: int, text: str, msg: str, rank: int | None,
                 host: str | None, ts: float | None, index: int, task: int | None = None) -> None:
        self.source = source  # file name as given, `<stdin>` for a pipe
        self.lineno = lineno  # 1-based physical line number in that input
        self.text = text      # the line as the user would see it (colours removed)
        self.msg = msg        # the bare message the rules match
        self.rank = rank      # from a rank label, else the file name's, or None
        self.host = host      # pdsh host label or None
        self.ts = ts          # seconds since the epoch (own or inherited) or None
        self.index = index    # position of the input among the job's files
        self.task = task      # an outer rank label around the rank's (srun -l's task id)
        # msg with long runs of one character squeezed, for literal tests (a short one is itself)
        self.gist = msg if len(msg) < _GIST_FROM else gist(msg)
        self.lits = -1  # literals.ALL: every literal test runs, until a reader's pass sets it

    def __repr__(self) -> str:
        return f"Line({self.source!r}:{self.lineno}, rank={self.rank}, msg={self.msg!r})"


def visible_text(raw: str) -> str:
    """Return a raw line without colours and without the progress bars `\\r` redraws over it.

    A terminal shows only the last `\\r` rewrite, but a message printed between two redraws of
    another rank's progress bar is still the user's log: every segment that is not a progress
    bar is kept; only when all of them are bars does the last one stand for the line.
    """
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        parts = [p for p in raw.split("\r") if p.strip()]
        text = [_PROGRESS_HEAD.sub("", p) for p in parts if not _PROGRESS.fullmatch(p.strip())]
        text = [t for t in text if t.strip()]
        if len(text) == 1:
            raw = text[0]
        elif text:
            raw = " ".join(t.strip() for t in text)
        else:
            raw = parts[-1] if parts else ""
    return raw.rstrip()


def strip_prefixes(text: str) -> tuple[str, int | None, str | None, float | None]:
    """Split a visible line into (message, rank, host, timestamp) by peeling known prefixes."""
    msg, rank, _, host, ts = peel_prefixes(text)
    return msg, rank, host, ts


# The characters each prefix can start with, so that a line is only asked about the prefixes
# it could begin with (most messages begin with a capital no prefix starts with): peeling
# runs on every line, and a dozen failed matches per line cost more than the rest of it.
_ISO_FIRST = frozenset("[0123456789")
_SYSLOG_FIRST = frozenset("JFMASOND")
_TS_FIRST = _ISO_FIRST | _SYSLOG_FIRST
# After `[`, the second character settles which bracket label may follow (any other non-ASCII
# one: the digit forms, \d being any Unicode digit); dmesg's stamps likewise.
_BRACKET_SECOND = dict.fromkeys(map(chr, range(128)), ())
_BRACKET_SECOND.update(dict.fromkeys("rdwtl:", (_RANK_PREFIXES[0],)))
_BRACKET_SECOND.update(dict.fromkeys("0123456789", (_RANK_PREFIXES[0], _RANK_PREFIXES[1])))
_BRACKET_SECOND["p"] = (_RANK_PREFIXES[5],)
_BRACKET_OTHER = (_RANK_PREFIXES[0], _RANK_PREFIXES[1])
_DMESG_SECOND = frozenset("+0123456789 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85")
_HUMAN_SECOND = frozenset("MTWFS")
_PREFIX_FIRST = {"[": _BRACKET_SECOND}
_PREFIX_FIRST["("] = (_RANK_PREFIXES[4],)
for _c in "0123456789":
    _PREFIX_FIRST[_c] = (_SRUN_LABEL, _RANK_PREFIXES[3], _RANK_PREFIXES[6])
for _c in "abcdefghijklmnopqrstuvwxyz":
    _PREFIX_FIRST[_c] = (_RANK_PREFIXES[3], _RANK_PREFIXES[6])
for _c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ])}>|!\"#$%&'*+,-./:;<=?@^_`{~":
    _PREFIX_FIRST[_c] = ()
_PREFIX_FIRST[">"] = (_RANK_PREFIXES[7],)
for _c in " \t\n\r\x0b\x0c":  # only srun's label may follow spaces (`  3: ...`)
    _PREFIX_FIRST[_c] = (_SRUN_LABEL,)


def _without(drop: tuple) -> dict:
    return {c: v if type(v) is dict else tuple(p for p in v if p not in drop)
            for c, v in _PREFIX_FIRST.items()}


# A line without `|` cannot carry docker compose's label, one without `:` neither srun's nor a
# host's (each ends in its character): a line is asked only what its characters allow.
_DOCKER, _HOST = _RANK_PREFIXES[6], _RANK_PREFIXES[3]
_PREFIX_NO_PIPE = _without((_DOCKER,))
_PREFIX_NO_COLON = _without((_SRUN_LABEL, _HOST))
_PREFIX_PLAIN = _without((_DOCKER, _SRUN_LABEL, _HOST))
# ISO stamps begin with a digit, after `[` or not: a second character that is ASCII and no
# digit rules them out.
_NOT_ISO_SECOND = frozenset(map(chr, range(128))) - frozenset("0123456789")


def _prefixes_for(msg: str, table: dict = _PREFIX_FIRST) -> tuple:
    """The rank and host prefix patterns that could match at the start of `msg`, in order."""
    found = table.get(msg[:1], _RANK_PREFIXES)  # others (space, non-ASCII): all of them
    if type(found) is dict:  # `[`: by the second character
        return found.get(msg[1:2], _BRACKET_OTHER)
    return found


def peel_prefixes(text: str) -> tuple[str, int | None, int | None, str | None, float | None]:
    """Split a visible line into (message, rank, task, host, timestamp); see the module docstring."""
    rank = task = host = ts = None
    journal = False  # a journald / syslog header was peeled
    # A paste indented as a markdown code block (or by a wrapper) still starts with its labels.
    msg = text.lstrip() if text[:1] in (" ", "\t") else text
    # msg only loses its head below: what it lacks now, it lacks throughout
    table = (_PREFIX_FIRST if "|" in msg else _PREFIX_NO_PIPE) if ":" in msg else \
        (_PREFIX_NO_COLON if "|" in msg else _PREFIX_PLAIN)
    for _ in range(6):
        before = msg
        first = msg[:1]
        m = _ISO_TS.match(msg) if first in _ISO_FIRST and msg[1:2] not in _NOT_ISO_SECOND else None
        dmy = m is None and first in _ISO_FIRST and not _DMY_FIRST.isdisjoint(msg[1:4]) and _DMY_TS.match(msg)
        if m or dmy:
            if ts is None:
                ts = iso_seconds(m) if m else dmy_seconds(dmy)
            m = m or dmy
            msg = msg[m.end():]
            m = _LEVEL.match(msg) if msg[:1] in "CDEFINPTW" else None
            if m:
                msg = msg[m.end():]
            elif "]:" in msg[:140] and (m := _JOURNAL_HEAD.match(msg)):
                msg, journal = msg[m.end():], True
        else:
            m = _SYSLOG_TS.match(msg) if first in _SYSLOG_FIRST else None
            if m:
                ts = syslog_seconds(m) if ts is None else ts
                msg = msg[m.end():]
                if "]:" in msg[:140] and (m := _JOURNAL_HEAD.match(msg)):
                    msg, journal = msg[m.end():], True
            elif first in _ISO_FIRST and (":" in (msg[2:3], msg[3:4]) or msg[10:11] in _EPOCH_END) \
                    and (m := _CLOCK_TS.match(msg)):
                if ts is None and m["epoch"]:
                    ts = float(m["epoch"])
                msg = msg[m.end():]  # a level after it stays: rich's `[10:00:02] ERROR    ` is read
            elif first in _VLLM_FIRST and msg[2:3] in _VLLM_THIRD and (m := _VLLM_HEAD.match(msg)):
                msg = msg[m.end():]
            elif first == "[":
                second = msg[1:2]
                # `[ +0.1]`/`[12.3]` (any space or digit), `[Mon Jan ...]`
                m = (_DMESG_TS.match(msg) if second in _DMESG_SECOND or not second.isascii()
                     else None) or (_DMESG_HUMAN_TS.match(msg) if second in _HUMAN_SECOND else None)
                if m:
                    msg = msg[m.end():]
        for pattern in _prefixes_for(msg, table):
            if journal and pattern is _HOST:
                continue  # the writer's own `unit.service: ` after its header is no host label
            m = pattern.match(msg)
            if m:
                groups = m.groupdict()
                # srun's label is the outermost one there is: a bare `2: ` inside a rank label
                # is the message's own text, not a rank.
                inner_srun = pattern is _SRUN_LABEL and rank is not None
                if groups.get("rank") is not None and len(groups["rank"]) < 10 and not inner_srun:
                    # A label inside another: the inner one is the rank, the outer the task.
                    task = rank if task is None else task
                    rank = int(groups["rank"])
                if groups.get("host") and host is None:
                    host = groups["host"]
                msg = msg[m.end():]
                break
        if msg == before:
            m = _PYTEST_E.match(msg) if msg[:1] == "E" else None
            if m is None:
                break
            msg = msg[m.end():]
    m = None if msg.isascii() else _BOX_LEFT.match(msg)  # the borders are not ASCII
    if m:
        msg = _BOX_RIGHT.sub("", msg[m.end():])
    # markdown's escaped backtick (typed outside a code block), a repr's escaped quote (`\'Half\'`)
    msg = msg.strip().replace("\\`", "`").replace("\\'", "'")
    if "x across cluster]" in msg:
        msg = _RAY_DEDUP.sub("", msg)
    if ("Error" in msg[:170] or "Exception" in msg[:170]) and (m := _DOUBLED_HEAD.match(msg)):
        msg = f"{m['head']}: {msg[m.end():]}"
    if msg[:1] == "`" or msg[-1:] == "`":
        msg = _inline_code(msg)
    elif msg[:2] in ("**", "__"):  # retyped in markdown bold (`**RuntimeError: ...**`), maybe cut
        inner = msg[2:-2] if msg.endswith(msg[:2]) and len(msg) > 4 else msg[2:]
        msg = inner.strip() if _BOLD_HEAD.match(inner) and msg[:2] not in inner else msg
    return msg, rank, task, host, ts


def _inline_code(msg: str) -> str:
    """A message without its inline-code backticks (both, or one alone: a cut, a span opened above)."""
    if msg[:1] != "`":
        return msg[:-1].rstrip() if msg.count("`") == 1 else msg
    inner = msg[1:-1] if msg[-1:] == "`" and len(msg) > 2 else msg[1:]
    return msg if "`" in inner else inner.strip()  # a ``` fence or a second span stays


_ESCAPED_TRACEBACK = re_compile(r'Traceback \(most recent call last\):\\n|\\n\s*File \\"')

# A job's lines repeat their labels and messages (each rank prints the same chatter, each job of
# a training code the same start-up): a short line's peel is kept for its next copies. The
# peel is a pure function of the text; long lines rarely repeat and are not kept.
_KEPT_PEEL = lru_cache(maxsize=4096)(peel_prefixes)
_KEPT_BELOW = 512


def _peel(text: str) -> tuple[str, int | None, int | None, str | None, float | None]:
    return _KEPT_PEEL(text) if len(text) < _KEPT_BELOW else peel_prefixes(text)


def _known_label(text: str) -> bool:
    """Whether the prefix peeler reads a label at the start of `text` (not a dropped suffix)."""
    return (msg := _peel(text)[0]) != (whole := text.strip()) and not (msg and whole.startswith(msg))


def normalize(raw_lines: Iterable["RawLine"], index: int = 0, file_rank: int | None = None,
              cut: set | None = None) -> Iterator[Line]:
    """Yield Line objects for RawLines of one input (`cut` gets paste.repaired's cut lines)."""
    last_ts = None
    for raw in repaired(raw_lines, _known_label, RawLine, cut):
        # Each step is called only where its own first test could pass: most lines need none.
        text = raw.text
        text = visible_text(text) if "\x1b" in text or "\r" in text else text.rstrip()
        cut = text[:MATCH_LIMIT + 512]
        if '{"log"' in cut or "&" in cut or cut[:1].isdigit() or '"MESSAGE"' in cut:
            cut = unwrap(cut)
        msg, rank, task, host, ts = _peel(cut if cut.isascii() else plain_chars(cut))
        msg = msg[:MATCH_LIMIT]
        if ts is None:
            ts = last_ts
        else:
            last_ts = ts
        if rank is None:
            rank = file_rank
        if "\\n" in msg and _ESCAPED_TRACEBACK.search(msg):
            # torchelastic's error.json (and other JSON) holds a traceback as one string with
            # `\n` escapes, and a wrapper's `stderr: b'...'` a whole job's output: read it as
            # the lines it stands for, all at this line number, each with its own labels.
            for part in _unescape(msg).split("\n"):
                if part.strip():
                    part_msg, part_rank, part_task, part_host, _ = _peel(part)
                    yield Line(raw.source, raw.lineno, part, part_msg,
                               rank if part_rank is None else part_rank, host or part_host, ts,
                               index, task if part_task is None else part_task)
            continue
        yield Line(raw.source, raw.lineno, text, msg, rank, host, ts, index, task)
