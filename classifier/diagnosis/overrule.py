"""When a rule's winning hit gives way: to an exception no rule explains, or to `none`.

Symptoms are echoes of a cause elsewhere, and some lines healthy runs print too; these checks
decide, from the failure signals and the other hits, whether the winner still stands.
"""

from classifier import taxonomy
from classifier.diagnosis.rootcause import line_order
from classifier.diagnosis.structure import respawned
from classifier.precompiled import re_compile

TAIL_LINES = 10  # a weak symptom this close to the end of its file is where the job hung
RECOVERED_SKIPS = 8  # non-finite readings in a row a loss scaler's back-off may leave behind
# torch_npu raises a bare device error (`npuSynchronizeDevice:... NPU error, error code is 107020`,
# `ACL stream synchronize failed`) and prints the runtime's own report under it: CANN's
# `EI9999:` / `EE1002:` lines say what failed (an HCCL task timeout). A hit in that report
# explains the exception above it; APPENDIX_LINES bounds how far the report runs.
DEVICE_RAISE = re_compile(r"\b(?:NPU|OPS) (?:function )?error\b|error code is \d{1,7}\b|\bACL stream synchronize failed")
APPENDIX_LINES = 12


def first_unexplained_exception(hits, signals, records=()):
    """The earliest real exception line that no rule hit covers (nor a spawn parent's re-raise), or None."""
    covered = {(line.source, line.lineno) for hit in hits for line in hit.lines} | respawned(records)
    free = [line for line in signals.exceptions if (line.source, line.lineno) not in covered
            and not _explained_below(line, hits, signals.exceptions)]
    return min(free, key=line_order) if free else None


def _explained_below(raised, hits, exceptions) -> bool:
    """Is `raised` a device runtime's bare error whose report, printed right under it by the
    same process, holds a rule hit (before any other exception line)?"""
    if not DEVICE_RAISE.search(raised.msg):
        return False
    end = raised.lineno + APPENDIX_LINES
    for other in exceptions:
        if other.source == raised.source and raised.lineno < other.lineno <= end:
            end = other.lineno - 1
    return any(line.source == raised.source and line.rank == raised.rank and raised.lineno < line.lineno <= end
               for hit in hits for line in hit.lines)


def crash_echoed(hits, signals):
    """The launcher's line saying the first rank to fail crashed, when the symptoms are its echoes.

    A segfaulting rank prints nothing, and its launcher says so only after its peers reported
    the connection it left them with (torch 2.13, gloo: `Connection closed by peer`), so the
    line comes last and no rule reads a cause. A SIGSEGV has no other reading. A SIGABRT is
    also how NCCL's watchdog ends a rank whose collective timed out, so it counts only where
    the launcher names the rank (torchelastic's summary, spawn) and every symptom is printed
    by another, labelled rank: the aborted rank said nothing of a timeout itself. The
    deepspeed launcher names no rank; there every symptom must be gloo's echo of a rank
    that printed none (`_gloo_echoes_of_silent_rank`).
    """
    if signals.crash is None:
        return None
    line, signal, rank = signals.crash
    if signal == "SIGSEGV":
        return line
    ranks = {l.rank for hit in hits for l in hit.lines}
    if None in ranks:
        return None
    if rank is None:
        return line if _gloo_echoes_of_silent_rank(hits, ranks) else None
    return None if rank in ranks else line


def _gloo_echoes_of_silent_rank(hits, ranks) -> bool:
    """Under the deepspeed launcher, whose line does not say which rank aborted: are the
    symptoms gloo's echoes of a rank that printed none of them?

    NCCL's watchdog aborts the rank whose collective timed out after that rank printed the
    timeout itself, so a watchdog abort leaves a timeout hit on the aborted rank. A gloo rank
    that waits in a collective raises (exit code 1), it is not aborted. So the SIGABRT is a
    crash where every symptom is gloo's: a lost peer, or a monitored barrier (TORCH_DISTRIBUTED_
    DEBUG=DETAIL runs one before every collective) naming ranks that printed no symptom.
    """
    named: set[int] = set()
    for hit in hits:
        category = hit.rule.category
        if category == "connection_failure":
            continue
        if category != "nccl_timeout" or "monitoredBarrier" not in hit.first.msg:
            return False
        named.update(int(r) for r in str(hit.facts.get("ranks", "")).replace(",", " ").split() if r.isdigit())
    return not named or not named & ranks


def exit_echoed(winner, hits, signals):
    """The launcher's line naming the first rank to fail, when a monitored barrier that names
    that rank is the winning symptom: the rank left (an exit code of its own), it did not hang.

    With TORCH_DISTRIBUTED_DEBUG=DETAIL every collective first runs gloo's monitored barrier,
    which drops the wait's own error (`Original exception:`), so a peer whose process exited
    reads `Rank 1 failed to pass monitoredBarrier in N ms` at once, as a hang does after N ms.
    A hang leaves the rank that waited as the first to fail (it raised); a rank the launcher
    reports first (torchelastic's summary, spawn's `process 1 terminated with exit code 3`),
    that the barrier names and that printed none of the symptoms, had left before it.
    """
    if signals.left_first is None or winner.rule.category != "nccl_timeout":
        return None
    line, rank = signals.left_first
    named = winner.facts.get("ranks")
    if not named or "monitoredBarrier" not in winner.first.msg:
        return None
    if rank not in {int(r) for r in named.replace(",", " ").split() if r.isdigit()}:
        return None
    if any(l.rank == rank for hit in hits for l in hit.lines):
        return None
    return line


def symptom_overruled(winner, hits, signals, unexplained):
    """Does the winning symptom give way to `none` or to an exception no rule explains?

    Symptoms are echoes: a rank that died of an exception no rule knows leaves its peers with
    connection resets and watchdog timeouts, so an unexplained exception that came first is
    the better answer (`unknown`). Weak symptoms (priority < 0) are lines healthy jobs print
    too (c10d's connect retries at start-up): they explain nothing in a job that went on
    without failing — unless they are where the log ends (the job hung there) and no later
    `resolved_by` line says the wait ended — and give way to an unexplained exception.
    A symptom of priority 0 or more gives way only where its `resolved_by` says the run got
    past it (`_got_past`).
    """
    if unexplained is not None and (line_order(unexplained) < line_order(winner.first) or
                                    _raised_apart(unexplained, hits)):
        return True
    if winner.rule.priority < 0 and winner.rule.category in taxonomy.TERMINAL and \
            _failed_before(winner, hits, signals.first_marker):
        return True
    if winner.rule.priority >= 0:
        return _got_past(winner, hits, signals)
    same = [h for h in hits if h.rule is winner.rule]
    if not signals.failed:
        return not any(signals.messages_after(h.lines[-1]) <= TAIL_LINES and
                       not signals.said_after(h.lines[-1], winner.rule.resolved_by) for h in same)
    # a failure after a wait that ended (`resolved_by` after every hit) is not that wait's
    return unexplained is not None or all(signals.said_after(h.lines[-1], winner.rule.resolved_by) for h in same)


def _raised_apart(unexplained, hits) -> bool:
    """Was the exception no rule explains raised by a rank of its own, in a file of its own, that
    no symptom is from, and does no timestamp order it against the symptoms?

    Per-rank files (torchrun's `--log_dir`, the deepspeed launcher's `--enable_each_rank_log`, a
    scheduler's per-task output) are read in name order, so the peer's file that reports losing
    the failing rank (`Connection closed by peer`) comes first although it happened after; the
    failing rank's file shows only its own error, with no rank label or time to order it by.
    """
    rank = unexplained.rank
    if rank is None:
        return False
    for hit in hits:
        for line in hit.lines:
            if line.source == unexplained.source or line.rank == rank or \
                    (line.ts is not None and unexplained.ts is not None):
                return False
    return True


def _got_past(winner, hits, signals) -> bool:
    """Is a symptom of priority 0 or more a moment the run got past? In a job that shows no
    failure, a later line its rule's `resolved_by` names says the run went on: one logging
    window with a NaN loss, finite losses in the windows after it (the step was skipped, the
    run did not diverge); or a few readings in a row that a loss scaler skipped while it
    backed off, then finite losses to the end."""
    if not winner.rule.resolved_by or signals.failed:
        return False
    same = sorted((h for h in hits if h.rule.category == winner.rule.category),
                  key=lambda h: line_order(h.lines[-1]))
    if len(same) == 1:
        return signals.said_after(same[0].lines[-1], winner.rule.resolved_by) > 0
    first, last = same[0].lines[0], same[-1].lines[-1]
    # A loss that goes non-finite, finite, non-finite again is a run diverging, not a skip.
    return (len(same) <= RECOVERED_SKIPS and len({h.lines[0].source for h in same}) == 1
            and signals.in_tail(first) and not signals.said_after(first, winner.rule.resolved_by, last)
            and signals.said_after(last, winner.rule.resolved_by) >= 2)


def _failed_before(winner, hits, marker) -> bool:
    """Did a failure line no rule explains (srun: a task launch failed, a task exited) come
    before a weak end-of-job line? Then the step was torn down after it, not cancelled."""
    if marker is None or line_order(marker) >= line_order(winner.first):
        return False
    return all((marker.source, marker.lineno) not in {(l.source, l.lineno) for l in h.lines} for h in hits)


def run_resumed(winner, hits, signals) -> bool:
    """Did a job that a terminal symptom says was ended run again and finish after it?

    Slurm writes a requeued job's next attempt into the same output file (`--open-mode=append`,
    or a requeue by Lightning / submitit), so `CANCELLED ... DUE TO JOB REQUEUE` followed, in
    its input's last lines, by the run saying it finished (the rule's `resolved_by`) was an
    interruption the job recovered from. Every hit of the category must be followed so."""
    rule = winner.rule
    if rule.category not in taxonomy.TERMINAL or rule.priority < 0 or not rule.resolved_by:
        return False
    same = [h for h in hits if h.rule.category == rule.category]
    return all(signals.said_after(h.lines[-1], rule.resolved_by) for h in same)
