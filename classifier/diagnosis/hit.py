"""What a rule hit is, and the checks both the line scan (match.py) and the cut-end pass
(cutend.py) apply to one: shared here so neither module imports the other."""


from classifier.precompiled import re_compile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line
    from classifier.rules.model import Rule

CONTEXT_LINES = 50    # lines before a hit that a rule's `context` may be found in
MIN_CUT = 24          # characters a partial match at a cut end must cover
MIN_CUT_KEYWORD = 6   # a keyword cut to fewer characters than this says too little

# Python tracebacks echo the source line that raised, and that source often holds the very
# message a rule looks for (`raise RuntimeError("... version mismatch ...")`). The exception
# line below it is the evidence; a match never starts on such a code line. A JSON member
# (`"message": "RendezvousConnectionError: ..."`, torchelastic's pretty-printed error file) is
# log output, not code.
# A line opening on a quote is a source line's string (a message spread over lines) unless it is
# a JSON key or a quoted exception line, as printed lists and JSON arrays of errors show them
# (`'RuntimeError: Address already in use', 'RuntimeError: NCCL error ...'`), Python's own
# message (`'NoneType' object has no attribute 'x'`), torch's (`"op" not implemented for
# 'Half'`) or cmd.exe's (`'nvcc' is not recognized ...`); right under a traceback's frame head,
# though, a quoted line is the frame's source (is_code).
_CODE_LINE = re_compile(r"""(?:raise|assert|return)\s|(?:logger|logging)\.\w+\(|log_dist\(|print\(|warnings\.warn\(|"""
                        # a quoted message that opens on an exception's name, or a runtime's error
                        # code (`"hipErrorNoBinaryForGpu: ...`, `"CUDA_ERROR_NO_DEVICE: ...`), is output
                        r"""f?(["'])(?![\w.-]{1,40}["']\s?:\s)(?![\w.]{0,80}(?:Error|Exception|ERROR)\w{0,60}:\s)"""
                        # a quote that never closes on its line opens no source string (Python
                        # closes each piece of a string spread over lines; triple quotes hold
                        # their own): a reporter's quoted message wrapped onto the next line
                        r"""(?!(?:(?!\1)[^\n]){20,}+$)"""
                        # a message quoted in a sentence (`"Duplicate GPU detected ..." from NCCL
                        # INFO`): prose goes on after its closing quote, code does not
                        r"""(?![^"'\n]{3,800}+["'][.,]?\s{1,3}(?!(?:if|else|in|not|and|or|is|for|lambda)\b)[a-z]{2,}\b(?![(.\[=]))"""
                        # Python's own `'NoneType' object has no attribute 'x'` is a message
                        r"""(?![\w.]{1,60}' object (?:has no attribute|is not (?:callable|subscriptable|iterable)))"""
                        # and a KeyError's quoted key read on in words (`'initial_lr' is not specified in
                        # ...`, `'MASTER_ADDR' is not set`): code compares a literal to None, if at all
                        r"""(?![\w.-]{1,80}["'] is (?:not )?(?!None\b|True\b|False\b|in\b)[a-z]{3,}\b(?![(.\[=]))"""
                        # and the dynamic loader's, a shared object's path first (`"/x/_C.so: undefined
                        # symbol: ..."`), or the linker's, an object file's (`"build/x.o: file not
                        # recognized: ..."`, relative or not), which no source string opens on
                        r"""(?![/~][^"'\n:]{0,300}\.so(?:\.\d{1,6}){0,4}:\s)"""
                        r"""(?![/~\w.+-][\w.+/~-]{0,300}\.(?:o|obj|so(?:\.\d{1,6}){0,4}):\s)"""
                        # and torch's dispatcher: `"addmm_impl_cpu_" not implemented for 'Half'`
                        r"""(?!\w{1,80}" not implemented for ')"""
                        # and Windows' command interpreter: `'nvcc' is not recognized as an ...`,
                        # on a Chinese Windows `'nvcc' 不是内部或外部命令`
                        r"""(?![^"'\n]{1,200}["'] (?:is not recognized as an internal or external command|不是内部或外部命令))"""
                        # and the import system's, quoted whole (even in triple quotes): a name in
                        # quotes after its words, where a source string holds a placeholder
                        r"""(?!["']{0,2}(?:cannot import name|No module named) ["'][\w.]{1,100}["'])""")
_QUOTED = re_compile(r"""f?["']""")
# An issue title often joins the raise line to the exception it printed (`raise OSError('CUDA_HOME
# is not set. ' OSError: CUDA_HOME is not set.`), the call's parenthesis closed or not
# (`raise ValueError(f'... is invalid') ValueError: ...`, or no blank after the parenthesis):
# after it the line is output again. A call whose arguments are names, not a string, joins the
# same way (`raise RendezvousConnectionError( torch...RendezvousConnectionError: The connection`,
# `raise ConstructorError(None, None, yaml.constructor.ConstructorError: could not`), and so does
# a `return` whose call closed (`return super().__torch_function__(...) RuntimeError: ...`).
_JOINED_EXCEPTION = re_compile(r"""(?:["'](?:\)\s{0,4}|\s{1,4})|^raise\s+[\w.]{1,100}\([\w\s,]{0,80}?[(,\s]\s{0,4}|\)\s{1,4})"""
                               r"""(?:\w{1,40}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception):\s""")
_FRAME_HEAD = re_compile(r"""File "[^"\n]+", line \d+""")


# A KeyError prints its message as the bare quoted key (`'LOCAL_RANK'`): a paste that starts on
# it has the key alone on a line and Python's chaining banner next, output and not a string
# literal of the source, as a window's first line.
_LONE_KEY = re_compile(r"""(["'])[\w.-]{1,80}\1""")
_CHAIN_BANNER = re_compile(r"During handling of the above exception|"
                           r"The above exception was the direct cause of the following exception")


def is_key_message(span) -> bool:
    """Whether a window opens on a KeyError's bare quoted key followed by the chaining banner."""
    return (len(span) > 1 and _LONE_KEY.fullmatch(span[0].msg) is not None
            and _CHAIN_BANNER.match(span[1].msg) is not None)


def is_code(buf, i: int) -> bool:
    """Whether buf[i] is a line of source code (echoed in a traceback or pasted), not output."""
    msg = buf[i].msg
    if _CODE_LINE.match(msg) and _JOINED_EXCEPTION.search(msg):
        return False
    return bool(_CODE_LINE.match(msg) or (
        i > 0 and _QUOTED.match(msg) and _FRAME_HEAD.search(buf[i - 1].msg)))


class Hit:
    """One rule firing: the lines its match spans and the values it captured."""

    __slots__ = ("rule", "lines", "facts")

    def __init__(self, rule: "Rule", lines: list["Line"], facts: dict[str, str]) -> None:
        self.rule, self.lines, self.facts = rule, lines, facts

    def __repr__(self) -> str:
        return f"Hit({self.rule.id!r}, lines={[ln.lineno for ln in self.lines]}, facts={self.facts!r})"

    @property
    def first(self) -> "Line":
        """The line where the matched message starts."""
        return self.lines[0]


def match_start(m) -> int:
    """Where the matched message starts: the match's start, or a group's read by a look-behind
    before it (a pattern that finds its literal first and the value before it backwards)."""
    start = m.start()
    for k in range(1, m.re.groups + 1):
        if -1 < m.start(k) < start:
            start = m.start(k)
    return start


def _excluded(rule, text, budget):
    return any(budget.search(p, text, rule.builtin) for p in rule.exclude)


# `path/to/module.py:131: UserWarning: ...`: a warning names a module without running through
# it, so a path in it is no context (torch/optim/lr_scheduler.py's step-order warning is not an
# optimizer's frame).
_WARNING_LINE = re_compile(r"^\S[^:]*\.py:\d+: (?:[A-Z]\w*)?Warning: ")


def _near(rule, buf, i, budget):
    """Does a `not_near` pattern match a line within CONTEXT_LINES before line i or the few
    read ahead after it (a teardown line that says what the hit really was)?"""
    return any(budget.search(p, buf[k].msg, rule.builtin) for k in range(max(0, i - CONTEXT_LINES), len(buf))
               for p in rule.not_near)


def _after_echo(rule, buf, i, budget):
    """Does a `not_after` pattern match a line within CONTEXT_LINES before line i (a line that
    makes what follows it an echo: a restarted attempt after the launcher's failure report)?
    Lines after the hit are not read: the same report follows the first attempt's failure."""
    return any(budget.search(p, buf[k].msg, rule.builtin) for k in range(max(0, i - CONTEXT_LINES), i)
               for p in rule.not_after)


def _has_context(rule, buf, i, budget):
    for k in range(max(0, i - CONTEXT_LINES), i + 1):
        msg = buf[k].msg
        if k < i and "Warning: " in msg and _WARNING_LINE.match(msg):
            continue
        if any(budget.search(p, msg, rule.builtin) for p in rule.context):
            return True
    return False
