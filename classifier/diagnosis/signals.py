"""Failure signals that are not categories: did the job fail at all, and what did it say last?

When no rule fires these decide between `unknown` (a real failure the taxonomy does not
explain; its final exception is the evidence) and `none` (a healthy log). They also read
torchelastic's "Root Cause (first observed failure)" summary, which names the failing rank.
"""

from collections import deque
from functools import lru_cache

from classifier.precompiled import re_compile
from classifier.diagnosis.literals import bits
from classifier.diagnosis.runstate import PROGRESS, RUN_END
from classifier.vocabulary import (ECHO, EXCEPTION_LINE, MARKER_HINT, ROOT_CAUSE, ROOT_FIELD,
                                  ROOT_FIELD_LINES)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

MAX_EXCEPTIONS = 256
END_LINES = 40  # an input's last non-empty lines, where a run that finished says so
# A run saying it trains in bf16: DeepSpeed's config dump (`bfloat16_config ... enabled=True` in
# 0.19, `bfloat16_enabled ... True` in older releases), its BF16 optimizer, HF's TrainingArguments
# (`bf16=True,`) and Megatron's argument dump (`bf16 ..... True`).
BF16_RUN = re_compile(r"\bbfloat16_(?:config\s+\.+\s+enabled=True|enabled\s+\.+\s+True)\b|"
                      r"Creating BF16 optimizer|^\s*bf16=True,?\s*$|^\s*bf16\s+\.+\s+True\s*$")


def _matches(patterns, msg):
    for pattern in patterns:
        if pattern.search(msg) is not None:
            return True
    return False


SUCCESS, EXCEPTION, ECHOED, MARKER, AFTERMATH = 1, 2, 3, 4, 5
# CPython's hook for an exception it cannot raise (a `__del__`, an atexit callback, a generator
# being finalised, a ctypes callback) prints `Exception ignored in: <obj>` (3.8+: also `...
# ignored in atexit callback`, `... ignored while ...`, `... ignored on ...`), then the traceback
# and the exception, and the program goes on: the torch 0.4 DataLoader's `__del__` reporting a
# worker's reset socket while it shuts down is the common one. Those lines are no failure.
IGNORED_HEADER = re_compile(r"^Exception ignored (?:in|on|while)\b")
_B_IGNORED = bits("Exception ignored")
IGNORED_SPAN = 200  # lines a header covers at most (a traceback cut before its exception)
_CHAINING = re_compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
# The literals each test below needs (literals.py): a line whose mask lacks them is not asked.
_MARKER_LITERALS, _MARKER_PATTERNS = MARKER_HINT.gate_parts()
_B_MARKER = bits(*_MARKER_LITERALS, caseless=True) | bits(*_MARKER_PATTERNS, caseless=True, regex=True)
_B_BF16 = bits("bf16", "BF16", "bfloat16")
_B_ROOT = bits(ROOT_CAUSE)
# A rank that crashed first, as the launcher that watched it says: DeepSpeed's launcher names
# the first rank to exit non-zero (launch.py's sigkill_handler, `... exits with return code =
# -11`, though the command it shows is the last one it spawned), torch.multiprocessing.spawn the
# first process to die (`process 1 terminated with signal SIGSEGV`), torchelastic's summary its
# first observed failure (`rank : 1`, then `exitcode : -11`). No category explains a crash, and
# its peers' lost connections and timeouts are its echoes (overrule.crash_echoed).
FIRST_EXIT = re_compile(r"exits with return code = (?P<code>-?\d+)|"
                        r"process (?P<rank>\d+) terminated with signal (?P<signal>SIG[A-Z]+)")
_B_EXIT = bits("return code = ", "terminated with signal")
# spawn's word for a child that left with a plain exit code (`process 1 terminated with exit code
# 3`): no crash, but the first rank to leave, as torchelastic's summary names it (`rank : 1`,
# `exitcode : 3`). A monitored barrier naming that rank is its echo (overrule.exit_echoed).
SPAWN_EXIT = re_compile(r"process (?P<rank>\d+) terminated with exit code (?P<code>\d+)")
_B_SPAWN_EXIT = bits("terminated with exit code")
# torchelastic's agent reporting a worker that failed (api.py: `failed (exitcode: 1) local_rank:
# 1 (pid: ...) of binary: ...`). With `--max_restarts` it then restarts the worker group (its
# `will restart worker group` is an INFO line torchrun does not print by default); without, the
# ChildFailedError traceback and its summary follow.
ELASTIC_WORKER_FAILED = re_compile(r"failed \(exitcode: -?\d+\) local_rank: \d+")
CRASH_CODES = {"-11": "SIGSEGV", "-6": "SIGABRT"}
# The shell's report of a rank that segfaulted, behind that rank's label (mpirun --tag-output's
# `[1]<stderr>:Segmentation fault (core dumped)`): its peers' lost connections echo it.
_RANK_SEGV = re_compile(r"(?:\S{1,200}: line \d{1,9}:\s+\d{1,10}\s+)?Segmentation fault(?: \(core dumped\))?\s*$")
# A logger's ERROR / CRITICAL / FATAL (Ray's autoscaler: PANIC) record that no failure term reads, counted when its text
# states a failure the program did not handle (a retry, a fallback, a skip, a count of 0):
# - the level peeled off with the timestamp (normalize._LEVEL): `%(asctime)s %(levelname)s
#   %(message)s`, `... - ERROR - ...`, loguru's `| ERROR    |`, so the message alone no longer
#   says it (`2024-04-16 14:59:40,459 ERROR Can't load tokenizer for 'bert-base-chinese'`);
# - the level left at the message's head: after a clock stamp (rich's `[14:59:40] ERROR    `) or a
#   journald header, structlog's `[error    ]`, and `ERROR: ` after a stamp only (`[%(asctime)s]
#   %(levelname)s:`; pip's bare `ERROR: ` notes come with no stamp);
# - logfmt's `level=error` (logrus, go-kit, slog), its own words read without the level.
# pytest's `E` column is peeled like the level (normalize._PYTEST_E): under it, an `assert` failed.
_PEELED_ASSERT = re_compile(r"(?:^|[\s\]:])E(?: {3,}|\t)$")
_PEELED_ERROR = re_compile(r"(?<![\w-])(?:ERROR|CRITICAL|FATAL|PANIC)[\s|:-]*$")
# vLLM's ERROR / CRITICAL record (normalize._VLLM_HEAD peels it): a failure line whatever it says,
# as it was while its head stayed on the message
_VLLM_ERROR_HEAD = re_compile(r"(?:^|\s)(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? \[?[\w./-]{1,200}:\d{1,6}\] ?$")
_LEVEL_LEAD = re_compile(r"(?:ERROR|CRITICAL|FATAL)(?P<colon>:)?\s+(?:\|\s+)?|\[(?:error|critical|fatal)\s{0,8}\]\s+")
_LOGFMT_LEVEL = re_compile(r"(?:^|\s)level=\"?(?i:error|fatal|critical)\b\"?")
_STAMP_END = re_compile(r"\d\d:\d\d(?:[.,:]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?\s{0,4}$")
_FAILURE_WORDS = re_compile(r"(?i)\b(?:can't|cannot|could ?n[o']t|unable to|fail(?:s|ed|ure)?\b|errors?\b|exception"
                            r"|traceback|not found|no such|invalid|denied|refused|timed out|abort|crash|fatal"
                            r"|killed|did not (?:complete|finish|start)|not (?:exist|supported|allowed))|失败|错误")
_HANDLED = re_compile(r"(?i)\b(?:retry|retrying|retries|will retry|trying again|ignor\w*|skipp\w*|falling back"
                      r"|fall back|fallback|continuing|recovered|resuming|0 errors?)\b|\berrors?\s{0,3}[:=]\s{0,3}0\b")


def _may_be_record(text: str, msg: str) -> bool:
    """A cheap gate before _error_record: the line holds a level word in one of its forms."""
    return ("ERROR" in text or "CRITICAL" in text or "FATAL" in text or "PANIC" in text or "level=" in msg
            or msg[:7] == "assert " or (msg[:1] == "[" and msg[1:2] in ("e", "c", "f")))


def _error_record(line: "Line") -> bool:
    """Was `line` a logger's ERROR / CRITICAL / FATAL record whose text states a failure the
    program did not handle (or pytest's failed assert)?"""
    text, msg = line.text, line.msg
    at = max(text.find(msg[:40]), 0)
    if at > 200:
        return False
    if msg.startswith("assert "):
        return at > 0 and _PEELED_ASSERT.search(text, 0, at) is not None
    lead = _LEVEL_LEAD.match(msg)
    if lead is not None:
        if lead["colon"] and not _STAMP_END.search(text, 0, at):
            return False
        msg = msg[lead.end():]
    elif "level=" in msg and (level := _LOGFMT_LEVEL.search(msg)) is not None:
        msg = msg[:level.start()] + " " + msg[level.end():]
    elif at > 0 and _VLLM_ERROR_HEAD.search(text, 0, at):
        return True
    elif at == 0 or not _PEELED_ERROR.search(text, 0, at):
        return False
    return _FAILURE_WORDS.search(msg) is not None and _HANDLED.search(msg) is None


def _line_kind(msg: str, gist: str, bare: bool = False) -> int:
    """What a message says, a pure function of it: SUCCESS, EXCEPTION, ECHOED (an exception
    line a launcher echoes), MARKER (another failure marker), AFTERMATH (a line saying only that
    the job failed: a teardown, a stack dump, an end-of-job record) or 0. `bare`: its literal mask
    says it holds no success / failure gate (the same answer, without asking)."""
    # Only the success / failure terms whose gates the line holds are searched: most
    # lines hold none (the same answer as SUCCESS / OTHER_FAILURE, at a fraction).
    hint = None if bare else MARKER_HINT.split(gist.lower())
    if hint is not None and _matches(hint[0], msg):
        return SUCCESS
    if EXCEPTION_LINE.match(msg):
        return ECHOED if ECHO.search(msg) else EXCEPTION
    if hint is not None and _matches(hint[1], msg):
        return MARKER
    if hint is not None and _matches(hint[2], msg):
        return AFTERMATH
    return 0


# Every line is asked, and lines repeat (ranks and jobs print the same chatter): a short
# message's kind is kept for its next copies.
_KEPT_KIND = lru_cache(maxsize=4096)(_line_kind)


class FailureSignals:
    """Collects, line by line, whether the job failed and its last exception line."""

    def __init__(self) -> None:
        self.failed = False
        self.last_exception = None     # last exception line that is not a launcher echo
        self.last_echo = None          # last launcher echo, used only if nothing better
        self.last_marker = None        # last generic failure line (Traceback, exit code)
        self.first_marker = None       # first one: a task failing before a step was torn down
        self.last_aftermath = None     # last line saying only that the job failed (vocabulary)
        self.root_rank = None
        self.root_exitcode = None
        self._root_left = 0
        self.crash = None              # (line, signal, rank or None): the first rank to fail crashed
        self.left_first = None         # (line, rank): the first rank to fail exited with a code of its own
        self._worker_failed = {}       # source -> line number of torchelastic's last worker failure
        self.first_worker_failed = {}  # source -> line number of its first
        self._exit_seen = False        # a launcher already named the first rank to fail
        self.last_lineno = {}          # source -> number of its last non-empty line
        self.exceptions = []           # the first real (non-echo) exception lines, bounded
        self._last_failure = {}        # source -> line number of its last failure marker
        self._last_success = {}        # source -> line number of its last success marker
        self._tails = {}               # source -> its last END_LINES messages
        self._tail_linenos = {}        # source -> their line numbers
        self.bf16_run = False          # the run says it trains in bf16
        self._ignored = {}             # (source, rank) -> [header lineno, traceback seen] of an
                                       # `Exception ignored in` block still open
        self._ignored_end = {}         # (source, rank) -> lineno of the last block's exception
        self.ignored_header = None     # the first `Exception ignored in` line: what a healthy
                                       # answer shows, so the reader sees why it was not counted

    def feed(self, line: "Line") -> None:
        """Inspect one normalised line."""
        msg, gist, lits = line.msg, line.gist, line.lits  # literal tests read the gist (normalize.gist)
        if not msg:
            return
        self.last_lineno[line.source] = line.lineno
        tail = self._tails.get(line.source)
        if tail is None:
            tail = self._tails[line.source] = deque(maxlen=END_LINES)
        tail.append(gist)  # RUN_END and PROGRESS find in a gist what they find in its message
        numbers = self._tail_linenos.get(line.source)
        if numbers is None:
            numbers = self._tail_linenos[line.source] = deque(maxlen=END_LINES)
        numbers.append(line.lineno)
        if not self.bf16_run and lits & _B_BF16 and ("bf16" in gist or "BF16" in gist or "bfloat16" in gist):
            self.bf16_run = bool(BF16_RUN.search(msg))
        if self._root_left:
            self._root_left -= 1
            m = ROOT_FIELD.match(msg)
            if m:
                field, value = m.groups()
                if field == "rank" and value.lstrip("-").isdigit() and len(value) < 10 and self.root_rank is None:
                    self.root_rank = int(value)
                elif field == "exitcode" and self.root_exitcode is None:
                    self.root_exitcode = value
                    if value.isdigit() and value != "0" and self.root_rank is not None and self.left_first is None:
                        self.left_first = (line, self.root_rank)
                    if value != "0" and self.last_marker is None:
                        # a paste of the summary's end alone: its exit code is the failure shown
                        self.last_marker = line
                    if value in CRASH_CODES and self.crash is None:
                        self.crash = (line, CRASH_CODES[value], self.root_rank)
        if lits & _B_ROOT and ROOT_CAUSE in gist:
            self._root_left = ROOT_FIELD_LINES
            self.failed = True
            self._last_failure[line.source] = line.lineno
            return
        if lits & _B_EXIT and not self._exit_seen:
            self._first_exit(line)
        if lits & _B_SPAWN_EXIT and self.left_first is None:
            m = SPAWN_EXIT.search(msg)
            if m and m["code"] != "0":
                self.left_first = (line, int(m["rank"]))
        if lits & _B_IGNORED and IGNORED_HEADER.match(msg):
            self._ignored[(line.source, line.rank)] = [line.lineno, False]
            if self.ignored_header is None:
                self.ignored_header = line
            return
        bare = not lits & _B_MARKER
        kind = _KEPT_KIND(msg, gist, bare) if len(msg) < 512 else _line_kind(msg, gist, bare)
        if not kind:
            if not (_may_be_record(line.text, msg) and _error_record(line)):
                return
            kind = MARKER
        if (self._ignored or self._ignored_end) and self._in_ignored_block(line, kind):
            return
        if kind == SUCCESS:
            self._last_success[line.source] = line.lineno
            return
        self.failed = True
        self._last_failure[line.source] = line.lineno
        if kind == MARKER and self.crash is None and line.rank is not None and not self._exit_seen \
                and self.left_first is None and _RANK_SEGV.match(msg):
            self.crash = (line, "SIGSEGV", line.rank)  # a labelled rank's own shell said it crashed
        if kind == MARKER and "failed (exitcode" in gist and ELASTIC_WORKER_FAILED.search(msg):
            self._worker_failed[line.source] = line.lineno
            self.first_worker_failed.setdefault(line.source, line.lineno)
        if kind == ECHOED:
            self.last_echo = line
        elif kind == AFTERMATH:
            self.last_aftermath = line
        elif kind == EXCEPTION:
            self.last_exception = line
            if len(self.exceptions) < MAX_EXCEPTIONS:
                self.exceptions.append(line)
        else:
            self.last_marker = line
            if self.first_marker is None:
                self.first_marker = line

    def _first_exit(self, line: "Line") -> None:
        """Read the first launcher line naming a rank that exited; keep it if the rank crashed."""
        m = FIRST_EXIT.search(line.msg)
        if m is None:
            return
        self._exit_seen = True
        signal = CRASH_CODES.get(m["code"]) if m["code"] else m["signal"]
        if signal in CRASH_CODES.values() and self.crash is None:
            self.crash = (line, signal, int(m["rank"]) if m["rank"] else None)

    def _in_ignored_block(self, line: "Line", kind: int) -> bool:
        """Is this failure line part of an `Exception ignored in` block (its traceback, its
        exception, a chained one)? The block ends with its exception line, or where a second
        traceback starts without a chaining line."""
        key = (line.source, line.rank)
        block = self._ignored.get(key)
        if block is None:
            end = self._ignored_end.pop(key, None)
            if end is not None and kind == MARKER and _CHAINING.match(line.msg):
                self._ignored[key] = [line.lineno, False]
                return True
            return False
        if line.lineno - block[0] > IGNORED_SPAN:
            del self._ignored[key]
            return False
        if kind in (EXCEPTION, ECHOED):
            del self._ignored[key]
            self._ignored_end[key] = line.lineno
            return True
        if kind == MARKER and line.msg.startswith("Traceback (most recent call last)"):
            if block[1]:                # a second traceback: a failure of its own
                del self._ignored[key]
                return False
            block[1] = True
            return True
        return kind == MARKER

    def messages_after(self, line: "Line") -> int:
        """How many non-empty lines of its input come after `line` (END_LINES at most)."""
        # Blank lines (a wrapped line's rejoined pieces leave theirs) say nothing of the end.
        numbers = self._tail_linenos.get(line.source, ())
        after = sum(n > line.lineno for n in numbers)
        return END_LINES if after == len(numbers) == END_LINES else after

    def said_after(self, line: "Line", patterns, until: "Line | None" = None) -> int:
        """How many messages of `line`'s input after it (and before `until`), among its last
        END_LINES, match one of `patterns`? (A weak symptom near the end asks whether the wait
        it reports ended.)"""
        if not patterns:
            return 0
        numbers = self._tail_linenos.get(line.source, ())
        tail = self._tails.get(line.source, ())
        end = until.lineno if until is not None else float("inf")
        return sum(line.lineno < n < end and bool(_matches(patterns, msg)) for n, msg in zip(numbers, tail))

    def in_tail(self, line: "Line") -> bool:
        """Is `line` among its input's last END_LINES messages (so what follows it is known)?"""
        numbers = self._tail_linenos.get(line.source, ())
        return bool(numbers) and numbers[0] <= line.lineno

    def survived(self) -> bool:
        """True when every file that shows a failure ends with a success marker after it, or
        with its run restarted by the elastic agent and finished (`restarted_and_finished`)."""
        return bool(self._last_failure) and all(
            self._last_success.get(src, 0) > lineno or self.restarted_and_finished(src)
            for src, lineno in self._last_failure.items())

    def restarted_and_finished(self, source: str, after: int = 0) -> bool:
        """Did torchelastic restart the workers after the input's last failure (the agent's
        report of a failed worker is that failure, and no ChildFailedError followed it), and
        did the run then say, in its last lines, that it finished? (`--max_restarts`: the first
        attempt's traceback is one the job recovered from.) `after`: a line the restart must
        follow too."""
        restart = self._worker_failed.get(source)
        if restart is None or restart < self._last_failure.get(source, 0) or restart < after:
            return False
        return any(n > restart and RUN_END.search(msg)
                   for n, msg in zip(self._tail_linenos.get(source, ()), self._tails.get(source, ())))

    def ends_mid_run(self) -> bool:
        """True when an input's last lines report training steps with no sign of the run
        finishing after them, and no input's last lines say it finished."""
        stopped = False
        for tail in self._tails.values():
            state = None
            for msg in tail:
                if RUN_END.search(msg):
                    state = "finished"
                elif PROGRESS.search(msg):
                    state = "training"
            if state == "finished":
                return False
            stopped = stopped or state == "training"
        return stopped

    def final_error(self) -> "Line | None":
        """The line that best states the failure when no rule explains it."""
        return self.last_exception or self.last_echo or self.last_marker or self.last_aftermath
