"""The words of the events the culprit witness reads (culprit.py), as literal tests that settle
most lines before any regex, and the per-message answers kept for a message's next copies."""

import re
from functools import lru_cache, partial

from classifier.numbers import small_int
from classifier.precompiled import re_compile

_STEP = re_compile(r"\b(?:global[_ ])?(?:step|iteration|iter)\b\s*(?:[:=#]\s*)?(?P<n>\d+)", re.IGNORECASE)
# Words of every event below, in a lower-cased line. Most lines hold none: `in` tests settle
# that 4x faster than an alternation regex (re tries each word at each position).
EVENT_WORDS = ("timeout", "timed out", "by peer", "monitoredbarrier", "watchdog", "nvrm", "ecc",
               "off the bus", "gpu is lost", "killed process", "oom-kill", "return code = -9",
               "exitcode: -9", "connect", "refused", "no route", "not known", "rendezvous",
               "host not found", "networkerror", "init complete")
_STEP_WORD = re_compile(r"\bstep\b")


def _step(msg: str):
    """_STEP.search(msg) from its word's first place (an ASCII line's lower() keeps positions)."""
    low = msg.lower()
    found = [i for i in (low.find("step"), low.find("iter")) if i >= 0] if msg.isascii() else [0]
    return _STEP.search(msg, max(0, min(found) - len("global_"))) if found else None


def _holds(text: str, words: tuple[str, ...]) -> bool:
    """Does `text` (lower-cased, where the words are) hold one of `words`?"""
    for word in words:
        if word in text:
            return True
    return False


# Literals each pattern needs (_TIMEOUT, _CONNECT_FAIL in the lower-cased line; _HW, _XID as written).
_TIMEOUT_HINTS = partial(_holds, words=(
    "collective operation timeout", "timed out in blocking wait", "timeout at nccl work",
    "detected by watchdog at work", "timed out waiting ", "connection closed by peer",
    "connection reset by peer", "failed to pass monitoredbarrier"))
_HW_HINTS = partial(_holds, words=("NVRM", "fallen off the bus", "uncorrectable ECC", "ECC error", "GPU is lost"))
_CONNECT_HINTS = partial(_holds, words=(
    "failed to connect to", "connection refused", "no route to host", "while trying to connect",
    "name or service not known", "rendezvousconnectionerror", "distnetworkerror", "host not found"))


def any_event(low: str) -> bool:
    """Does the lower-cased line name any event the witness reads?"""
    if _holds(low, EVENT_WORDS):
        return True
    at = low.find("step")  # \bstep\b starts at an occurrence: search from the first one
    return at >= 0 and _STEP_WORD.search(low, at) is not None


def _step_number(msg: str) -> int | None:
    m = _step(msg)
    return small_int(m["n"]) if m else None


def _event(gist: str) -> bool:
    return any_event(gist.lower())


# Every line is asked both, and lines repeat (ranks and jobs print the same chatter): a short
# message's answers are kept for its next copies (both are pure functions of it).
_kept_step = lru_cache(maxsize=4096)(_step_number)
_kept_event = lru_cache(maxsize=4096)(_event)
