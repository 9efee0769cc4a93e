"""Stage 3's backstop: how much regex time one line and one job may take.

The backtracking lint (classifier/rules/lint.py) refuses a rule pattern it can make slow, but
it cannot prove every user pattern linear, and one search's timeout does not bound a log of
many lines that each near-miss a slow pattern. Each rule search here runs with what is left
of three budgets as its timeout: REGEX_TIMEOUT for the search, PER_LINE for all the searches
a line triggers (its windows, exclusions, context), PER_JOB for the whole job. A spent budget
skips the searches it covers, with a warning; the hits found so far still make the diagnosis.

The budgets are counted on the wall clock (cheap), but a wall clock stretched by a loaded host or
a garbage-collector pause is not regex work: before a budget is called spent, the thread's CPU
clock is asked (`_recount`), so a diagnosis does not change with the machine's load.
"""

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.read import Warnings

REGEX_TIMEOUT = 0.5  # seconds per search; no rule and no line may stall a diagnosis
# regex's `timeout=` costs about 6 us a call, more than most searches: a built-in pattern (the
# suite's backtracking check and fuzzing cover every one) on a text this short goes without
# it, and its time still counts against the line's and the job's budgets.
UNTIMED_TEXT = 4096
# Measured with benchmarks/regex_budget.py (2 shared cores): the corpus's slowest line takes
# about 5 ms of rule regex time (up to 35 ms when another process takes the core), its slowest
# job 0.06-0.1 s, the 1 GB 256-rank log of scale.py under 0.01 s (the prefilter leaves few
# lines): the budgets sit 14x and 100x above. A user pattern that backtracks takes
# REGEX_TIMEOUT on every window of every line without them.
PER_LINE = 0.5
PER_JOB = 10.0
_NO_LINE = object()
_monotonic = time.monotonic
_cpu = time.thread_time  # ~1 us a call against ~0.1 us: asked only once the wall clock says spent


class RegexBudget:
    """The regex time left to one job and to the line being matched."""

    def __init__(self, warnings: "Warnings | None" = None, per_line: float = PER_LINE,
                 per_job: float = PER_JOB) -> None:
        self.warnings = warnings
        self.per_line = per_line
        self.per_job = per_job
        self.job_left = per_job
        self.line_left = per_line
        self._worst = 0.0
        self._line = None
        self._job_warned = False
        self._warned_line = _NO_LINE
        self._cpu_job = _cpu()   # the job's CPU clock at its start
        self._cpu_line = None    # the line's, once the wall clock has overstated a budget
        self._cpu_mode = False   # it has: each new line notes its CPU clock

    @property
    def exhausted(self) -> bool:
        """Did the job's budget run out (so some lines were never matched)?"""
        return self._job_warned

    @property
    def spent(self) -> float:
        """Seconds of regex time the job has taken."""
        return self.per_job - self.job_left

    @property
    def worst_line(self) -> float:
        """Seconds of regex time the slowest line took."""
        return max(self._worst, self.per_line - self.line_left)

    def start(self, line: object) -> None:
        """Charge the searches that follow to `line`; a new line gets the whole per-line budget."""
        if line is not self._line:
            self._worst = self.worst_line
            self._line, self.line_left = line, self.per_line
            self._cpu_line = _cpu() if self._cpu_mode else None

    def search(self, pattern, text: str, trusted: bool = False, **kwargs):
        """`pattern.search(text)` within what is left of the budgets; None when spent or slow.

        `trusted`: a built-in rule's pattern, searched without a timeout on a short text."""
        # Cheap on purpose: it runs for every window of every keyword line.
        allowance = self.line_left if self.line_left < self.job_left else self.job_left
        if allowance > REGEX_TIMEOUT:
            allowance = REGEX_TIMEOUT
        elif allowance <= 0:
            if not self._recount():
                self._spent()
                return None
            allowance = min(self.line_left, self.job_left, REGEX_TIMEOUT)
        started = _monotonic()
        try:
            if trusted and len(text) <= UNTIMED_TEXT:
                found = pattern.search(text, **kwargs)
            else:
                found = pattern.search(text, timeout=allowance, **kwargs)
        except TimeoutError:
            found = TimeoutError
        took = _monotonic() - started
        self.line_left -= took
        self.job_left -= took
        if found is not TimeoutError:
            return found
        if allowance == REGEX_TIMEOUT:
            self._warn("regex_timeout", f"a rule pattern ran past {REGEX_TIMEOUT}s and was "
                                        f"skipped on one line: {pattern.pattern[:80]}")
        else:
            self._spent()
        return None

    def charge(self, took: float) -> None:
        """Count `took` seconds of searches timed together against the line and the job."""
        self.line_left -= took
        self.job_left -= took

    def _recount(self) -> bool:
        """Is a budget the wall clock calls spent still open by the thread's CPU clock? A line
        whose start was not noted on it begins again there (at most twice its budget)."""
        now = _cpu()
        self._cpu_mode = True
        if self.job_left <= 0:
            # All of the job's CPU, not only its regex time: an upper bound of what it spent.
            self.job_left = self.per_job - (now - self._cpu_job)
        if self.line_left <= 0:
            if self._cpu_line is None:
                self._cpu_line, self.line_left = now, self.per_line
            else:
                self.line_left = self.per_line - (now - self._cpu_line)
        return self.line_left > 0 and self.job_left > 0

    def _spent(self):
        """Say which budget ran out: the job's once, a line's once per line."""
        if self.job_left <= 0:
            if not self._job_warned:
                self._job_warned = True
                self._warn("regex_budget", f"rule patterns used up the job's {self.per_job:g} s "
                                           f"of regex time; no rule pattern ran after that "
                                           f"(keywords only): the diagnosis rests on what "
                                           f"matched before")
        elif self._line is not self._warned_line:
            self._warned_line = self._line
            self._warn("regex_line_budget", f"rule patterns used up a line's {self.per_line:g} s "
                                            f"of regex time; its other patterns were skipped")

    def _warn(self, code, message):
        if self.warnings is not None:
            self.warnings.add(code, message)
