"""Failure signals that are not categories: did the job fail at all, and what did it say last?

When no rule fires these decide between `unknown` (a real failure the taxonomy does not
explain; its final exception is the evidence) and `none` (a healthy log). They also read
torchelastic's "Root Cause (first observed failure)" summary, which names the failing rank.
"""

import re

# `RuntimeError: ...`, `torch.distributed.DistBackendError: ...`, `KeyError: 'x'`, a bare
# `AssertionError`; the dotted module path is optional.
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure|Fault)|Exception)"
    r"(?::\s|:$|$)"
    # a class from a package module, whatever its name: `deepspeed.elasticity.config.Elasticity...: `
    r"|^(?:[a-z_]\w*\.){2,}[A-Z]\w+: ")
# Launchers re-raise a child's failure under their own name; these are echoes, not causes.
_ECHO = re.compile(r"ChildFailedError|CalledProcessError|SystemExit|SignalException")
_OTHER_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|terminate called after throwing|Segmentation fault"
    r"|core dumped|Fatal Python error|exits with return code = -?[1-9]|failed \(exitcode: -?[1-9]"
    r"|exit(?:ed with)? (?:code|status):? -?[1-9]|^Killed$|^Aborted|srun: error:|FAILED\b"
    r"|\bF\d{4} \d\d:\d\d:\d\d"
    # argparse: `train.py: error: argument --x: invalid choice`, `error: unrecognized arguments`
    r"|^[\w.-]+: error: (?:argument|unrecognized arguments|the following arguments)")
# Lines only a job that finished prints. A failure marker followed by one of these in the same
# file was survived (a caught exception, a retried upload), not fatal.
_SUCCESS = re.compile(r"Process \d+ exits successfully|'train_runtime':|\btrain_runtime\s+=|"
                      r"Training completed\. Do not forget")
_ROOT_CAUSE = "Root Cause (first observed failure)"
MAX_EXCEPTIONS = 256
_ROOT_FIELD = re.compile(r"^(rank|exitcode|host)\s*:\s*(-?\d+|\S+)")


class FailureSignals:
    """Collects, line by line, whether the job failed and its last exception line."""

    def __init__(self):
        self.failed = False
        self.last_exception = None     # last exception line that is not a launcher echo
        self.last_echo = None          # last launcher echo, used only if nothing better
        self.last_marker = None        # last generic failure line (Traceback, exit code)
        self.root_rank = None
        self.root_exitcode = None
        self._root_left = 0
        self.last_lineno = {}          # source -> number of its last non-empty line
        self.exceptions = []           # the first real (non-echo) exception lines, bounded
        self._last_failure = {}        # source -> line number of its last failure marker
        self._last_success = {}        # source -> line number of its last success marker

    def feed(self, line):
        """Inspect one normalised line."""
        msg = line.msg
        if not msg:
            return
        self.last_lineno[line.source] = line.lineno
        if self._root_left:
            self._root_left -= 1
            m = _ROOT_FIELD.match(msg)
            if m:
                field, value = m.groups()
                if field == "rank" and value.lstrip("-").isdigit() and self.root_rank is None:
                    self.root_rank = int(value)
                elif field == "exitcode" and self.root_exitcode is None:
                    self.root_exitcode = value
        if _ROOT_CAUSE in msg:
            self._root_left = 8
            self.failed = True
            self._last_failure[line.source] = line.lineno
            return
        if _SUCCESS.search(msg):
            self._last_success[line.source] = line.lineno
            return
        if _EXCEPTION.match(msg):
            self.failed = True
            self._last_failure[line.source] = line.lineno
            if _ECHO.search(msg):
                self.last_echo = line
            else:
                self.last_exception = line
                if len(self.exceptions) < MAX_EXCEPTIONS:
                    self.exceptions.append(line)
        elif _OTHER_FAILURE.search(msg):
            self.failed = True
            self.last_marker = line
            self._last_failure[line.source] = line.lineno

    def survived(self):
        """True when every file that shows a failure ends with a success marker after it."""
        return bool(self._last_failure) and all(
            self._last_success.get(src, 0) > lineno for src, lineno in self._last_failure.items())

    def final_error(self):
        """The line that best states the failure when no rule explains it."""
        return self.last_exception or self.last_echo or self.last_marker
